module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln(%a: tensor<512x0xbf16>, %b: tensor<0x0xbf16>, %r: tensor<512x0xbf16>, %w: tensor<0xbf16>, %bias: tensor<0xbf16>)
    -> (tensor<512x0xbf16>, tensor<512xf32>, tensor<512xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b residual(%r : tensor<512x0xbf16>) norm_weight(%w : tensor<0xbf16>) norm_bias(%bias : tensor<0xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<512x0xbf16>, tensor<0x0xbf16> -> tensor<512x0xbf16>, tensor<512xf32>, tensor<512xf32>
  return %y, %m, %s : tensor<512x0xbf16>, tensor<512xf32>, tensor<512xf32>
}
}
