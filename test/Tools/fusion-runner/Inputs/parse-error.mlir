// Not valid MLIR: used by errors.mlir.

func.func @ok(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf16
}
