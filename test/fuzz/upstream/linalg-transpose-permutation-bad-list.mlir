func.func @f(%x: tensor<4x8xf32>, %e: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %t = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, ]
  return %t : tensor<8x4xf32>
}
