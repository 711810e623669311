module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad(%a: tensor<0x512xbf16>, %b: tensor<512x0xbf16>, %x: tensor<0x0xbf16>, %r: tensor<0xf32>) -> tensor<0x0xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: grad epilogues are not handled by this generator yet}}
  %c = fusion.fused_matmul %a, %b norm_input(%x : tensor<0x0xbf16>) rstd(%r : tensor<0xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<0x512xbf16>, tensor<512x0xbf16> -> tensor<0x0xbf16>
  return %c : tensor<0x0xbf16>
}
}
