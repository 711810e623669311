module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_residual(%a: tensor<64x128xbf16>, %b: tensor<128x0xbf16>, %r: tensor<64x0xbf16>) -> (tensor<64x0xbf16>, tensor<64xf32>) {
  %c = fusion.matmul %a, %b : tensor<64x128xbf16>, tensor<128x0xbf16> -> tensor<64x0xbf16>
  %s = fusion.add %r, %c : tensor<64x0xbf16>
  %y, %rstd = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<64x0xbf16> -> tensor<64x0xbf16>, tensor<64xf32>
  return %y, %rstd : tensor<64x0xbf16>, tensor<64xf32>
}
}
