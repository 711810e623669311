func.func @f(%a: tensor<4x16x7xf32>, %b: tensor<4x7x8xf32>, %z: tensor<4x16x8xindex>) -> tensor<4x16x8xindex> {
  %c = linalg.batch_matmul ins(%a, %b : tensor<4x16x7xf32>, tensor<4x7x8xf32>) outs(%z : tensor<4x16x8xindex>) -> tensor<4x16x8xindex>
  return %c : tensor<4x16x8xindex>
}
// Not a lit test: test/fuzz/regressions-diagnostics.test checks that fusion-opt refuses it
// (GUARD-INDEX) and that Debian's mlir-opt still crashes on it.
