func.func @f(%v: tensor<4xf32>, %e: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %b = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e : tensor<4x8xf32>) dimensions = 
  return %b : tensor<4x8xf32>
}
