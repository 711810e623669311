module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @norm(%x: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  return %y : tensor<64x1024xbf16>
}
func.func @reference(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %x, %y : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
}
