module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln_cluster_residual(%a: tensor<512x256xbf16>, %b: tensor<256x0xbf16>, %r: tensor<512x0xbf16>) -> tensor<512x0xbf16> {
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<512x0xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<512x256xbf16>, tensor<256x0xbf16> -> tensor<512x0xbf16>
  return %y : tensor<512x0xbf16>
}
}
