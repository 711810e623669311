module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @f(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 9223372036854775807, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>} : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}
