func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64xf32> -> tensor<64xf32>
  return %y : tensor<64xf32>
}
