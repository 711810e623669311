// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// A kernel configuration with a tile dimension of 0.
func.func @zero_tile(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected tile_n > 0, but got 0}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 0, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// A negative shared-memory size.
func.func @negative_smem(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected smem_bytes >= 0, but got -1}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = -1>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// Rows through global memory and a cluster at once.
func.func @global_rows_cluster(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{expected cluster_n = 1 with global_rows (a row exchanges its statistics through DSMEM or global memory, not both), but got cluster_n = 2}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 200000, epilogue_warps = true, global_rows = true>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}

// -----

// A staged residual without the epilogue warps that load it.
func.func @staged_without_warps(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{expected epilogue_warps with staged_residual (the epilogue warps load the residual), but got epilogue_warps = false}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 200000, staged_residual = true>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}

// -----

// More consumer warpgroups than a CTA's 1024 threads hold (a huge count once
// wrapped tile_m = 64 x consumers back to 128 and ran the generator away).
func.func @too_many_consumers(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected consumers <= 7 (a producer and the consumer warpgroups of 128 threads within 1024 threads per CTA), but got 288230376151711746}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 288230376151711746, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// A configured shared-memory size beyond the target's opt-in limit per CTA.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @smem_over_target(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected a kernel configuration with smem_bytes <= 232448 (the sm_90a opt-in shared memory per CTA), but got smem_bytes = 9223372036854775807}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4611686018427387904, cluster_n = 1, consumers = 2, smem_bytes = 9223372036854775807>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// split_k counts K ranges: at least one.
func.func @split_k_zero(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected split_k >= 1, but got 0}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144, split_k = 0>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// A norm's row needs all of K: no split-K with a norm epilogue's cluster.
func.func @split_k_with_cluster(%a: tensor<256x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<256x1024xbf16> {
  // expected-error @below {{expected split_k = 1 with a norm epilogue's cluster_n, epilogue_warps or global_rows (a norm needs whole rows of K), but got split_k = 2}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 4, consumers = 2, smem_bytes = 198144, split_k = 2>} : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>
  return %c : tensor<256x1024xbf16>
}

// -----

// Stream-K cuts a tile's K between two CTAs: plain tiles only.
func.func @stream_k_with_split_k(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected stream_k without split_k, cluster_n, epilogue_warps or global_rows (stream-K splits a tile's K between two CTAs: plain tiles only), but got split_k = 2, cluster_n = 1}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144, split_k = 2, stream_k = true>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// The small-M configuration is a second plan of a planned GEMM.
func.func @small_m_without_main(%a: tensor<?x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{expected 'fusion.kernel_small_m' beside a 'fusion.kernel' (the main kernel's configuration), but got none}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 148480>} : tensor<?x512xbf16>, tensor<512x256xbf16> -> tensor<?x256xbf16>
  return %c : tensor<?x256xbf16>
}

// -----

// The decode configuration is the kernel's third body, beside the small-M one.
func.func @decode_without_small_m(%a: tensor<?x512xbf16>, %b: tensor<256x512xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{expected 'fusion.kernel_decode' beside a 'fusion.kernel_small_m' (the decode body is the kernel's third), but got none}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144>, fusion.kernel_decode = #fusion.kernel_config<tile_m = 32, tile_n = 64, tile_k = 64, stages = 18, cluster_n = 1, consumers = 2, smem_bytes = 222208>, transpose_rhs} : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
  return %c : tensor<?x256xbf16>
}

// -----

// The small-M configuration is a #fusion.kernel_config.
func.func @small_m_not_a_config(%a: tensor<?x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{expected 'fusion.kernel_small_m' to be a #fusion.kernel_config attribute, but got 64 : i64}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144>, fusion.kernel_small_m = 64} : tensor<?x512xbf16>, tensor<512x256xbf16> -> tensor<?x256xbf16>
  return %c : tensor<?x256xbf16>
}

// -----

// Only a fused GEMM has kernel configurations.
func.func @small_m_on_norm(%x: tensor<?x512xbf16>, %w: tensor<512xbf16>) -> tensor<?x512xbf16> {
  // expected-error @below {{expected 'fusion.kernel_small_m' on a fusion.fused_matmul, but it is on 'fusion.rms_norm'}}
  %y = fusion.rms_norm %x weight(%w : tensor<512xbf16>) {epsilon = 1.0e-5 : f32, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 148480>} : tensor<?x512xbf16> -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}

// -----

// The small-M kernel's shared memory within the target's limit, like the main one's.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @small_m_smem_over_target(%a: tensor<?x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected a kernel configuration with smem_bytes <= 232448 (the sm_90a opt-in shared memory per CTA), but got smem_bytes = 300000}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 300000>} : tensor<?x512xbf16>, tensor<512x256xbf16> -> tensor<?x256xbf16>
  return %c : tensor<?x256xbf16>
}
}

// -----

// decode_splits counts K ranges: at least one.
func.func @zero_decode_splits(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected decode_splits >= 1, but got 0}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912, decode_splits = 0>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// decode_splits with the two-kernel split-K.
func.func @decode_splits_split_k(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected decode_splits without split_k, stream_k, cluster_n, epilogue_warps or global_rows (plain tiles whose K ranges one CTA finishes), but got decode_splits = 4, split_k = 2, cluster_n = 1}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912, split_k = 2, decode_splits = 4>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// cluster_m: a pair of CTAs sharing B's tiles, no more.
func.func @cluster_m_four(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected cluster_m = 1 or 2 (a pair of CTAs sharing B's tiles by multicast), but got 4}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144, cluster_m = 4>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// cluster_m with a norm epilogue's cluster along N.
func.func @cluster_m_with_cluster_n(%a: tensor<256x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<256x1024xbf16> {
  // expected-error @below {{expected cluster_m without cluster_n, split_k, stream_k, decode_splits, epilogue_warps or global_rows (a pair of CTAs running the same column blocks and K steps in step), but got cluster_m = 2, cluster_n = 4, split_k = 1}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 4, consumers = 2, smem_bytes = 226816, epilogue_warps = true, cluster_m = 2>} : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>
  return %c : tensor<256x1024xbf16>
}

// -----

// fusion.side_kernel marks a planned GEMM whose next kernel runs beside it.
func.func @side_kernel_unplanned(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected 'fusion.side_kernel' as a unit attribute of a planned fusion.fused_matmul (one with a 'fusion.kernel'), but got unit on 'fusion.fused_matmul'}}
  %c = fusion.fused_matmul %a, %b {fusion.side_kernel} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

func.func @side_kernel_not_unit(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{expected 'fusion.side_kernel' as a unit attribute of a planned fusion.fused_matmul (one with a 'fusion.kernel'), but got 36 : i64 on 'fusion.fused_matmul'}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144>, fusion.side_kernel = 36} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

func.func @side_kernel_on_a_norm(%x: tensor<8x32xbf16>) -> tensor<8x32xbf16> {
  // expected-error @below {{expected 'fusion.side_kernel' as a unit attribute of a planned fusion.fused_matmul (one with a 'fusion.kernel'), but got unit on 'fusion.rms_norm'}}
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32, fusion.side_kernel} : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<8xf32>
  return %y : tensor<8x32xbf16>
}
