func.func @f(%x: tensor<4x8xf32>, %e: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %t = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, ]
  return %t : tensor<8x4xf32>
}
// Not a lit test: test/fuzz/regressions-diagnostics.test checks that fusion-opt refuses it
// (GUARD-TRANSPOSE) and that Debian's mlir-opt still crashes on it.
