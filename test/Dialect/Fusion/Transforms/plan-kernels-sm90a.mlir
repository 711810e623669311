// RUN: fusion-opt %s -split-input-file "-fusion-plan-kernels=small-m=false" | FileCheck %s
// (small-m=false: the small-M body of dynamic token counts is tested in
// Dialect/Fusion/Transforms/plan-kernels-small-m.mlir and
// Conversion/FusionToGPU/small-m-sm90a.mlir.)

// The sm_90a rules (planFusedMatmul): tile_m = 128 (2 consumer warpgroups),
// tile_k = 64, stages the deepest of [2, 6] that fits 232448 bytes with
//   smem = stages * (128 + tile_n) * 64 * 2    (bf16/f16 A/B ring)
//        [+ B * 128 * 64 * 2]                  (output staging, 16-bit outputs:
//                                               B = 2 buffers, 1 with a cluster)
//        + 128 * 4                             (Lazy Pre-Norm row sums)
//        [+ 128 * tile_n * 2]                  (norm_input tile, grad epilogues)
//        [+ R * 2 * 128 * cluster_n * 4]        (DSMEM slots, cluster_n > 1:
//                                               R = 2 rounds for LayerNorm, else 1)
//        + 1024                                (mbarriers, alignment)

// Test that a plain fusion.matmul is rewritten into a fusion.fused_matmul
// without prologue or epilogue and selects the widest tile_n (256) for a wide
// N and a long K loop (16 steps): 4 * 49152 + 32768 + 512 + 1024 = 230912
// (5 stages would need 280064).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @matmul_rewritten
// CHECK-SAME: (%[[A:.*]]: tensor<4096x1024xbf16>, %[[B:.*]]: tensor<1024x1024xbf16>)
func.func @matmul_rewritten(%a: tensor<4096x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16> {
  // CHECK-NOT: fusion.matmul
  // CHECK: %[[C:.*]] = fusion.fused_matmul %[[A]], %[[B]]
  // CHECK-SAME: {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>}
  // CHECK-SAME: : tensor<4096x1024xbf16>, tensor<1024x1024xbf16> -> tensor<4096x1024xbf16>
  // CHECK-NOT: fusion.matmul
  // CHECK: return %[[C]]
  %c = fusion.matmul %a, %b : tensor<4096x1024xbf16>, tensor<1024x1024xbf16> -> tensor<4096x1024xbf16>
  return %c : tensor<4096x1024xbf16>
}
}

// -----

// Test that a transposed-rhs f16 matmul with a dynamic M keeps transpose_rhs
// and selects tile_n = N = 64 and the deepest ring:
// 6 * (128 + 64) * 64 * 2 + 32768 + 512 + 1024 = 181760.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @matmul_narrow_dynamic_m
func.func @matmul_narrow_dynamic_m(%a: tensor<?x256xf16>, %b: tensor<64x256xf16>) -> tensor<?x64xf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 181760>, transpose_rhs}
  // CHECK-SAME: : tensor<?x256xf16>, tensor<64x256xf16> -> tensor<?x64xf16>
  %c = fusion.matmul %a, %b {transpose_rhs} : tensor<?x256xf16>, tensor<64x256xf16> -> tensor<?x64xf16>
  return %c : tensor<?x64xf16>
}
}

// -----

// Test that N = 200 is covered by one tile rounded up to 256 (tile_n is a
// multiple of 64 on sm_90a: B is staged in 64-column TMA boxes; the 56
// columns past N are zero-filled and never stored) when the epilogue is
// row-independent (row_scale, Lazy Pre-Norm prologue) and the K loop is long
// (K = 1024): 4 * (128 + 256) * 64 * 2 + 32768 + 512 + 1024 = 230912 (5
// stages would need 280064).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @row_scale_prologue
func.func @row_scale_prologue(%a: tensor<8192x1024xbf16>, %b: tensor<1024x200xbf16>, %s: tensor<8192xf32>) -> tensor<8192x200xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<8192xf32>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32,
       epilogue = #fusion.epilogue<row_scale>}
      : tensor<8192x1024xbf16>, tensor<1024x200xbf16> -> tensor<8192x200xbf16>
  return %y : tensor<8192x200xbf16>
}
}

// -----

// Test that a single-CTA rms_norm epilogue (N = 192 fits one CTA) selects
// tile_n = N, cluster_n = 1: 4 * (128 + 192) * 64 * 2 + 32768 + 512 + 1024
// = 198144.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @rms_norm_single_cta
func.func @rms_norm_single_cta(%a: tensor<8192x512xbf16>, %b: tensor<512x192xbf16>) -> (tensor<8192x192xbf16>, tensor<8192xf32>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144>
  %y, %rstd = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<8192x512xbf16>, tensor<512x192xbf16> -> tensor<8192x192xbf16>, tensor<8192xf32>
  return %y, %rstd : tensor<8192x192xbf16>, tensor<8192xf32>
}
}

// -----

// Test that a layer_norm epilogue over N = 1536 with an f32 output selects
// the portable cluster of 8 CTAs of 192 columns that planEpilogueNorm chose
// (16-bit outputs over more than 4 CTAs go through global memory instead),
// with DSMEM slots and no output staging:
// 5 * (128 + 192) * 64 * 2 + 512 + 2 * 2 * 128 * 8 * 4 + 1024 = 222720
// (6 stages would need 263680).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @layer_norm_cluster8
func.func @layer_norm_cluster8(%a: tensor<8192x512xbf16>, %b: tensor<512x1536xbf16>, %r: tensor<8192x1536xbf16>) -> tensor<8192x1536xf32> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 5, cluster_n = 8, consumers = 2, smem_bytes = 222720>
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<8192x1536xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<8192x512xbf16>, tensor<512x1536xbf16> -> tensor<8192x1536xf32>
  return %y : tensor<8192x1536xf32>
}
}

// -----

// Test that an rms_norm epilogue over N = 2560 (10 CTAs of 256 columns, more
// than the 4 a cluster takes on sm_90a) exchanges its statistics through
// global memory: cluster_n = 1, tile_n = 256, and the whole bf16 tile waits
// in shared memory (4 staging buffers) for the epilogue warps, with its
// rows' scale and shift: 3 * (128 + 256) * 64 * 2 + 4 * 16384 + 512 +
// 2 * 128 * 4 + 1024 = 215552 (4 stages need 264704).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @rms_norm_global
func.func @rms_norm_global(%a: tensor<1024x256xbf16>, %b: tensor<256x2560xbf16>) -> tensor<1024x2560xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 215552, epilogue_warps = true, global_rows = true>
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1024x256xbf16>, tensor<256x2560xbf16> -> tensor<1024x2560xbf16>
  return %y : tensor<1024x2560xbf16>
}
}

// -----

// Test that an rms_norm_grad epilogue (N = 128, one CTA, bf16 dx) runs in
// the epilogue warps: the whole tile staged (2 buffers), no norm_input tile
// (the epilogue warps read it from global memory) but [4][128] f32 row
// scalars: 5 * (128 + 128) * 64 * 2 + 32768 + 512 + 2048 + 1024 = 200192
// (6 stages need 232960).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @rms_norm_grad_single_cta
func.func @rms_norm_grad_single_cta(%dy: tensor<4096x512xbf16>, %w: tensor<128x512xbf16>,
    %x: tensor<4096x128xbf16>, %rstd: tensor<4096xf32>) -> tensor<4096x128xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 128, tile_k = 64, stages = 5, cluster_n = 1, consumers = 2, smem_bytes = 200192, epilogue_warps = true>
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<4096x128xbf16>) rstd(%rstd : tensor<4096xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs}
      : tensor<4096x512xbf16>, tensor<128x512xbf16> -> tensor<4096x128xbf16>
  return %dx : tensor<4096x128xbf16>
}
}

// -----

// Test that a layer_norm_grad epilogue over N = 320 selects a cluster of 2
// CTAs of 192 columns (the second holding 128), like the forward norm, in
// the epilogue warps: 4 * (128 + 192) * 64 * 2 + 3 * 16384 + 512 + 2048 +
// 2 * 2 * 128 * 2 * 4 + 1024 = 220672 (5 stages need 261632).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @layer_norm_grad_cluster2
func.func @layer_norm_grad_cluster2(%dy: tensor<4096x512xbf16>, %w: tensor<320x512xbf16>,
    %x: tensor<4096x320xbf16>, %mean: tensor<4096xf32>, %rstd: tensor<4096xf32>) -> tensor<4096x320xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 2, consumers = 2, smem_bytes = 220672, epilogue_warps = true>
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<4096x320xbf16>)
      mean(%mean : tensor<4096xf32>) rstd(%rstd : tensor<4096xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>, transpose_rhs}
      : tensor<4096x512xbf16>, tensor<320x512xbf16> -> tensor<4096x320xbf16>
  return %dx : tensor<4096x320xbf16>
}
}

// -----

// Test that an op planned before is planned again: its stale fusion.kernel
// is replaced by the one the rules select (N = 128, f32 output, so no
// output staging: 6 stages, 198144).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @replanned
func.func @replanned(%a: tensor<256x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<256x128xf32> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 128, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 198144>}
  %c = fusion.fused_matmul %a, %b
      {fusion.kernel = #fusion.kernel_config<tile_m = 64, tile_n = 64, tile_k = 32, stages = 1, cluster_n = 1, consumers = 1, smem_bytes = 0>}
      : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
  return %c : tensor<256x128xf32>
}
}

// -----

// Test that a module without GEMMs (and without a target) selects nothing and
// is left unchanged.
// CHECK-LABEL: func.func @nothing_to_plan
// CHECK-NEXT: return %{{.*}} : tensor<4xf32>
func.func @nothing_to_plan(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Test that a short K loop (K = 512: 8 steps) with a row-independent epilogue
// keeps the widest tile and one CTA per SM: the kernel is persistent, so the
// producer loads the next tile while the consumers run this one's epilogue
// (no second CTA is needed for that overlap): 4 * (128 + 256) * 64 * 2
// + 32768 + 512 + 1024 = 230912.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @short_k
func.func @short_k(%a: tensor<262144x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<262144x512xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>
  %y = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32}
      : tensor<262144x512xbf16>, tensor<512x512xbf16> -> tensor<262144x512xbf16>
  return %y : tensor<262144x512xbf16>
}
}

// -----

// Test that a short K loop with a norm epilogue keeps the row in one CTA
// (N = 256) with the widest ring.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @short_k_norm
func.func @short_k_norm(%a: tensor<262144x256xbf16>, %b: tensor<256x256xbf16>) -> tensor<262144x256xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<262144x256xbf16>, tensor<256x256xbf16> -> tensor<262144x256xbf16>
  return %y : tensor<262144x256xbf16>
}
}

// -----

// Test that a matmul with a bias (nn.Linear: weight [N, K], transpose_rhs)
// becomes a fused_matmul whose col_bias is that bias, planned like a plain
// GEMM: 4 * (128 + 256) * 64 * 2 + 32768 + 512 + 1024 = 230912.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME: (%[[X:.*]]: tensor<?x512xbf16>, %[[W:.*]]: tensor<1024x512xbf16>, %[[B:.*]]: tensor<1024xbf16>)
func.func @linear_bias(%x: tensor<?x512xbf16>, %w: tensor<1024x512xbf16>, %b: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  // CHECK-NOT: fusion.matmul
  // CHECK: %[[Y:.*]] = fusion.fused_matmul %[[X]], %[[W]] col_bias(%[[B]] : tensor<1024xbf16>)
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>
  // CHECK-SAME: transpose_rhs
  // CHECK: return %[[Y]]
  %y = fusion.matmul %x, %w bias(%b : tensor<1024xbf16>) {transpose_rhs}
      : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}

// -----

// Test that standalone norms, adds and muls are left in place without a
// configuration (convert-fusion-to-gpu gives them row kernels of their own),
// while the GEMM beside them is planned.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @row_ops_left
// CHECK: %[[N:.*]] = fusion.rms_norm %{{.*}} {epsilon = 9.99999974E-6 : f32} : tensor<256x512xbf16> -> tensor<256x512xbf16>
// CHECK: %[[L:.*]], %{{.*}}, %{{.*}} = fusion.layer_norm %[[N]] {epsilon = 9.99999974E-6 : f32}
// CHECK: %[[A:.*]] = fusion.add %[[L]], %{{.*}} : tensor<256x512xbf16>, tensor<512xbf16>
// CHECK: %[[M:.*]] = fusion.mul %[[A]], %{{.*}} : tensor<256x512xbf16>, tensor<512xbf16>
// CHECK: fusion.fused_matmul %[[M]], %{{.*}} {fusion.kernel = #fusion.kernel_config<
// CHECK-NOT: fusion.kernel
// CHECK: return
func.func @row_ops_left(%x: tensor<256x512xbf16>, %v: tensor<512xbf16>, %w: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<256x512xbf16> -> tensor<256x512xbf16>
  %l, %mean, %rstd = fusion.layer_norm %n {epsilon = 1.0e-05 : f32}
      : tensor<256x512xbf16> -> tensor<256x512xbf16>, tensor<256xf32>, tensor<256xf32>
  %a = fusion.add %l, %v : tensor<256x512xbf16>, tensor<512xbf16>
  %m = fusion.mul %a, %v : tensor<256x512xbf16>, tensor<512xbf16>
  %y = fusion.matmul %m, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}
}

// -----

// Test that a LayerNorm-prologue GEMM (nn.Linear's transposed weight, N =
// 1024) gets B's column sums as col_sum: a [1, K] splat of ones (B's type)
// times B into f32 [1, N], itself planned as a GEMM (tile_n 256, f32 output:
// 4 * 49152 + 512 + 1024 = 198144), collapsed to [N]; and that its own
// tile_n is 192 (the sm_90a limit for the LayerNorm prologue), its row
// statistics twice the RMSNorm's (sums and squares):
// 4 * (128 + 192) * 64 * 2 + 32768 + 2 * 512 + 1024 = 198656.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @layer_norm_prologue_col_sum
// CHECK-SAME: (%[[A:.*]]: tensor<4096x768xbf16>, %[[B:.*]]: tensor<1024x768xbf16>)
func.func @layer_norm_prologue_col_sum(%a: tensor<4096x768xbf16>, %b: tensor<1024x768xbf16>) -> tensor<4096x1024xbf16> {
  // CHECK: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : tensor<1x768xbf16>
  // CHECK: %[[SUMS:.*]] = fusion.fused_matmul %[[ONES]], %[[B]]
  // CHECK-SAME: tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144
  // CHECK-SAME: transpose_rhs
  // CHECK-SAME: : tensor<1x768xbf16>, tensor<1024x768xbf16> -> tensor<1x1024xf32>
  // CHECK: %[[CS:.*]] = tensor.collapse_shape %[[SUMS]] {{\[\[}}0, 1]] : tensor<1x1024xf32> into tensor<1024xf32>
  // CHECK: %[[Y:.*]] = fusion.fused_matmul %[[A]], %[[B]] col_sum(%[[CS]] : tensor<1024xf32>)
  // CHECK-SAME: tile_n = 192, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198656
  // CHECK-SAME: prologue = #fusion.prologue<layer_norm>
  // CHECK: return %[[Y]]
  %y = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs}
      : tensor<4096x768xbf16>, tensor<1024x768xbf16> -> tensor<4096x1024xbf16>
  return %y : tensor<4096x1024xbf16>
}
}

// -----

// Test that with a constant B the column sums are a constant too (here B
// [K, N] = [64, 64] of 0.5: 32 per column), and no GEMM is added.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @layer_norm_prologue_constant_b
func.func @layer_norm_prologue_constant_b(%a: tensor<512x64xbf16>) -> tensor<512x64xbf16> {
  // CHECK: %[[CS:.*]] = arith.constant dense<3.200000e+01> : tensor<64xf32>
  // CHECK-NOT: fusion.matmul
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} col_sum(%[[CS]] : tensor<64xf32>)
  // CHECK-NOT: fusion.fused_matmul
  %b = arith.constant dense<0.5> : tensor<64x64xbf16>
  %y = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<512x64xbf16>, tensor<64x64xbf16> -> tensor<512x64xbf16>
  return %y : tensor<512x64xbf16>
}
}

// -----

// Test that a LayerNorm-prologue GEMM that has its col_sum keeps it: no
// column-sum GEMM is added.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @layer_norm_prologue_given_col_sum
// CHECK-SAME: %[[CS:[^:]*]]: tensor<128xf32>)
func.func @layer_norm_prologue_given_col_sum(%a: tensor<512x256xbf16>, %b: tensor<256x128xbf16>, %cs: tensor<128xf32>) -> tensor<512x128xbf16> {
  // CHECK-NOT: arith.constant
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} col_sum(%[[CS]] : tensor<128xf32>)
  // CHECK-NOT: fusion.fused_matmul
  %y = fusion.fused_matmul %a, %b col_sum(%cs : tensor<128xf32>) {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<512x256xbf16>, tensor<256x128xbf16> -> tensor<512x128xbf16>
  return %y : tensor<512x128xbf16>
}
}

