module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @free(%x: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  return %y : tensor<64x1024xbf16>
}
}
