// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s
// And that the sm_100a generator builds every one of these configurations
// (a kernel each; CPU only, no ptxas):
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels -convert-fusion-to-gpu | FileCheck %s --check-prefix=GEN

// sm_100a is planned for its tcgen05 kernel (Gemm/GemmTcgen05Kernel.cpp):
// 128-row tiles read back from tensor memory by one epilogue warpgroup
// (consumers = 1); an element-wise epilogue takes tile_n up to 256, so that
// two accumulator stages fit the 512 tensor-memory columns
// (gemmMaxElementwiseTileN), in multiples of 64 (B is staged in 64-column
// TMA boxes, as on sm_90a); the same 232448-byte budget and the same
// shared-memory formula as sm_90a (16-bit outputs add 32768 bytes of
// TMA-store staging). Row-reducing epilogues keep their whole row on one
// CTA up to 512 columns (tile_n = N rounded up to 64: two accumulator
// stages up to 256, one past it), which the kernel's norm epilogue
// (Gemm/GemmTcgen05Epilogue.cpp) reads in passes; wider rows take a
// cluster of CTAs exchanging partials through DSMEM (epilogue_warps = false:
// the epilogue warpgroup finishes them from the tensor memory), up to 16;
// rows wider still (up to 32 tiles of 512) exchange them through global
// memory, the tile waiting in tensor memory.

// Test that a plain matmul with a wide N selects tile_n = 256 (two 256-column
// accumulator stages) with 4 stages:
// 4 * (128 + 256) * 64 * 2 + 32768 + 512 + 1024 = 230912.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @matmul_wide
// CHECK-SAME: (%[[A:.*]]: tensor<8192x1024xbf16>, %[[B:.*]]: tensor<1024x1024xbf16>)
func.func @matmul_wide(%a: tensor<8192x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<8192x1024xbf16> {
  // CHECK-NOT: fusion.matmul
  // CHECK: %[[C:.*]] = fusion.fused_matmul %[[A]], %[[B]]
  // CHECK-SAME: {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>}
  // CHECK: return %[[C]]
  %c = fusion.matmul %a, %b : tensor<8192x1024xbf16>, tensor<1024x1024xbf16> -> tensor<8192x1024xbf16>
  return %c : tensor<8192x1024xbf16>
}
}

// -----

// Test that a row-independent epilogue over N = 200 selects N rounded up to
// the granularity of 64: tile_n = 256, 4 stages (230912 bytes).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @row_scale_granularity
func.func @row_scale_granularity(%a: tensor<4096x1024xf16>, %b: tensor<1024x200xf16>, %s: tensor<4096xf32>) -> tensor<4096x200xf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<4096xf32>)
      {epilogue = #fusion.epilogue<row_scale>}
      : tensor<4096x1024xf16>, tensor<1024x200xf16> -> tensor<4096x200xf16>
  return %y : tensor<4096x200xf16>
}
}

// -----

// Test that an rms_norm epilogue over N = 512 selects one CTA of 512 columns
// (planEpilogueNorm on sm_100a: one accumulator stage of all 512 tensor-memory
// columns) with 2 stages: 2 * (128 + 512) * 64 * 2 + 32768 + 512 + 1024 =
// 198144.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @rms_norm_single_cta
func.func @rms_norm_single_cta(%a: tensor<4096x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<4096x512xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144>
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<4096x512xbf16>, tensor<512x512xbf16> -> tensor<4096x512xbf16>
  return %y : tensor<4096x512xbf16>
}
}

// -----

// Test that a narrow GEMM selects the deepest ring on sm_100a as on sm_90a:
// N = 64, 6 * (128 + 64) * 64 * 2 + 32768 + 512 + 1024 = 181760.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @matmul_narrow
func.func @matmul_narrow(%a: tensor<?x4096xbf16>, %b: tensor<4096x64xbf16>) -> tensor<?x64xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 1, smem_bytes = 181760>
  %c = fusion.matmul %a, %b : tensor<?x4096xbf16>, tensor<4096x64xbf16> -> tensor<?x64xbf16>
  return %c : tensor<?x64xbf16>
}
}

// -----

// Test that an rms_norm epilogue over N = 256 with a saved rstd selects one
// CTA of 256 columns (two accumulator stages) with 4 stages: 230912 bytes.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @rms_norm_two_stages
func.func @rms_norm_two_stages(%a: tensor<4096x512xbf16>, %b: tensor<512x256xbf16>, %w: tensor<256xbf16>) -> (tensor<4096x256xbf16>, tensor<4096xf32>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>
  %y, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<4096x512xbf16>, tensor<512x256xbf16> -> tensor<4096x256xbf16>, tensor<4096xf32>
  return %y, %r : tensor<4096x256xbf16>, tensor<4096xf32>
}
}

// -----

// Test that a layer_norm epilogue with a residual over N = 448 and an f32
// output selects one CTA of 448 columns (one accumulator stage) with 3
// stages and no output staging: 3 * (128 + 448) * 64 * 2 + 512 + 1024 =
// 222720.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @layer_norm_f32
func.func @layer_norm_f32(%a: tensor<4096x512xbf16>, %b: tensor<512x448xbf16>, %r: tensor<4096x448xbf16>) -> tensor<4096x448xf32> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 448, tile_k = 64, stages = 3, cluster_n = 1, consumers = 1, smem_bytes = 222720>
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<4096x448xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<4096x512xbf16>, tensor<512x448xbf16> -> tensor<4096x448xf32>
  return %y : tensor<4096x448xf32>
}
}

// -----

// Test that an rms_norm epilogue over N = 1024 selects a cluster of 2 CTAs of
// 512 columns, without epilogue warps, one TMA-store buffer (a cluster
// finishing in registers), 2 stages: 2 * (128 + 512) * 64 * 2 + 16384 +
// 512 + 2 parities x 2 x 128 x 4 + 1024 = 183808.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @rms_norm_cluster
func.func @rms_norm_cluster(%a: tensor<4096x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<4096x1024xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 2, consumers = 1, smem_bytes = 183808>
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<4096x512xbf16>, tensor<512x1024xbf16> -> tensor<4096x1024xbf16>
  return %y : tensor<4096x1024xbf16>
}
}

// -----

// Test that a layer_norm epilogue over N = 12288 (24 tiles of 512, wider
// than a cluster of 16) selects global rows with an f32 output (the tile
// waits in tensor memory, not in shared memory: no whole-tile staging, no
// scale/shift slots; f32 is stored from registers), 2 stages:
// 2 * (128 + 512) * 64 * 2 + 512 + 1024 = 165376.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @layer_norm_global_rows
func.func @layer_norm_global_rows(%a: tensor<4096x512xbf16>, %b: tensor<512x12288xbf16>) -> tensor<4096x12288xf32> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 165376, global_rows = true>
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<4096x512xbf16>, tensor<512x12288xbf16> -> tensor<4096x12288xf32>
  return %y : tensor<4096x12288xf32>
}
}

// -----

// Test that an rms_norm_grad epilogue over N = 512 selects one CTA of 512
// columns with 2 stages and no norm_input tile (the sm_100a kernel reads
// norm_input from global memory, a row per thread): 2 * (128 + 512) * 64 *
// 2 + 32768 + 512 + 1024 = 198144.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @rms_norm_grad_single_cta
func.func @rms_norm_grad_single_cta(%dy: tensor<4096x512xbf16>, %w: tensor<512x512xbf16>,
    %x: tensor<4096x512xbf16>, %rstd: tensor<4096xf32>) -> tensor<4096x512xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144>
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<4096x512xbf16>) rstd(%rstd : tensor<4096xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs}
      : tensor<4096x512xbf16>, tensor<512x512xbf16> -> tensor<4096x512xbf16>
  return %dx : tensor<4096x512xbf16>
}
}

// GEN: gpu.func @matmul_wide_kernel0
// GEN: gpu.func @row_scale_granularity_kernel0
// GEN: gpu.func @rms_norm_single_cta_kernel0
// GEN: gpu.func @matmul_narrow_kernel0
// GEN: gpu.func @rms_norm_two_stages_kernel0
// GEN: gpu.func @layer_norm_f32_kernel0
// GEN: gpu.func @rms_norm_cluster_kernel0
// GEN: gpu.func @layer_norm_global_rows_kernel0
// GEN: gpu.func @rms_norm_grad_single_cta_kernel0
