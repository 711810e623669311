module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mixed(%a: tensor<512x256xbf16>, %b: tensor<256x256xf16>) -> tensor<512x256xbf16> {
  %y = fusion.fused_matmul %a, %b : tensor<512x256xbf16>, tensor<256x256xf16> -> tensor<512x256xbf16>
  return %y : tensor<512x256xbf16>
}
}
