// RUN: fusion-opt %s -split-input-file "--fusion-plan-kernels=report=true" -verify-diagnostics | FileCheck %s
// RUN: fusion-opt %s -split-input-file "--fusion-plan-kernels=small-m=false" | FileCheck %s --check-prefix=OFF
// RUN: fusion-opt %s -split-input-file "--fusion-plan-kernels=small-m-split=true" | FileCheck %s --check-prefix=SPLIT
// With small-m-split (experimental) a dynamic M's small-M configuration
// also gets decode_splits = 4 where its K loop carries only the accumulator
// (a plain GEMM, a per-head norm), not with Lazy Pre-Norm's row sums in
// the kernel, nor in a static M's replanned main configuration.
// SPLIT-LABEL: func.func @linear_dynamic
// SPLIT: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912, decode_splits = 4>
// SPLIT-LABEL: func.func @lazy_prenorm_dynamic
// SPLIT-NOT: decode_splits
// SPLIT-LABEL: func.func @linear_static
// SPLIT-NOT: decode_splits
// SPLIT-LABEL: func.func @q_proj_q_norm
// SPLIT: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 128, {{.*}}, decode_splits = 4>
// OFF-NOT: kernel_small_m

// The small-M kernel (planSmallMFusedMatmul; small-m, on by default, and
// off with small-m=false): a GEMM planned for a dynamic
// token count whose tile_n is free (no row reduction, cluster, split-K or
// stream-K; a per-head norm's groups) also gets `fusion.kernel_small_m`,
// the same op planned with tiles of 64 columns (of one head for per-head
// norms) and the deepest ring they fit, up to 12 stages (kSmallMMaxStages:
// the main kernels stop at 6):
//   8 * (128 + 64) * 64 * 2 + 2 * 128 * 64 * 2 + 512 + 1024 = 230912.
// (Tiles of 128 columns, one head of 128, fit 6: 230912 again.)
// convert-fusion-to-gpu builds both bodies into one kernel and the host
// picks one per call. A static M whose tiles would occupy at most half the
// SMs is planned with the 64-column tiles instead.

// Llama's projection written as nn.Linear (transpose_rhs), any token count:
// both configurations, and a remark for each.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @linear_dynamic
func.func @linear_dynamic(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>
  // CHECK-SAME: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912>
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256}}
  // expected-remark @below {{small-M GEMM kernel on sm_90a for calls whose tiles of 256 columns would occupy at most 1/2 of the SMs: #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912>}}
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
}

// -----

// Lazy Pre-Norm with a column bias (the epilogue is per element): both.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @lazy_prenorm_dynamic
func.func @lazy_prenorm_dynamic(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %bias: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config}}
  // expected-remark @below {{small-M GEMM kernel on sm_90a}}
  %y = fusion.fused_matmul %x, %w col_bias(%bias : tensor<1024xbf16>) {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}

// -----

// A static token count that few (16 tokens: one row block of 16 tiles of
// 256, at most half the 132 SMs) is replanned with 64-column tiles; one
// of 4096 tokens (512 tiles) keeps the main plan. Neither gets a second
// kernel.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @linear_static
func.func @linear_static(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>, %x2: tensor<4096x4096xbf16>) -> (tensor<16x4096xbf16>, tensor<4096x4096xbf16>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912>
  // CHECK-NOT: kernel_small_m
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256
  // CHECK-NOT: kernel_small_m
  // CHECK: return
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256}}
  // expected-remark @below {{GEMM kernel on sm_90a replanned for its 16 rows (its tiles of 256 columns would occupy at most 1/2 of the SMs): #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912>}}
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256}}
  %y2 = fusion.matmul %x2, %w {transpose_rhs} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %y, %y2 : tensor<16x4096xbf16>, tensor<4096x4096xbf16>
}
}

// -----

// A norm epilogue over whole rows: tile_n is the row's split, no second kernel.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @post_norm_dynamic
func.func @post_norm_dynamic(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-NOT: kernel_small_m
  // CHECK: return
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config}}
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<1024xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}

// -----

// A per-head norm (Qwen3's q_norm, heads of 128) takes the narrowest tile
// of whole heads: 128 columns, 16 CTAs at 16 tokens instead of 8. Heads of
// 256 already fill the main tile: nothing narrower to take.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @q_proj_q_norm
func.func @q_proj_q_norm(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>, %g2: tensor<256xbf16>) -> (tensor<?x2048xbf16>, tensor<?x2048xbf16>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 128, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 230912>
  // CHECK: fusion.fused_matmul
  // CHECK-NOT: kernel_small_m
  // CHECK: return
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256}}
  // expected-remark @below {{small-M GEMM kernel on sm_90a for calls whose tiles of 256 columns would occupy at most 1/2 of the SMs: #fusion.kernel_config<tile_m = 128, tile_n = 128}}
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<128xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256}}
  %y2 = fusion.fused_matmul %x, %w norm_weight(%g2 : tensor<256xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 256 : i64, transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y, %y2 : tensor<?x2048xbf16>, tensor<?x2048xbf16>
}
}

// -----

// Tiles already of 64 columns (N = 64): nothing narrower to take.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @narrow_dynamic
func.func @narrow_dynamic(%x: tensor<?x512xbf16>, %w: tensor<512x64xbf16>) -> tensor<?x64xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-NOT: kernel_small_m
  // CHECK: return
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 64}}
  %y = fusion.matmul %x, %w : tensor<?x512xbf16>, tensor<512x64xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
}

// -----

// sm_100a accumulates in tensor memory: its kernels keep one shape for now.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @linear_dynamic_sm100a
func.func @linear_dynamic_sm100a(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-NOT: kernel_small_m
  // CHECK: return
  // expected-remark @below {{GEMM kernel on sm_100a: #fusion.kernel_config}}
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
}

// -----

// Planning again replaces both configurations: with small-m=false, an
// earlier small-M plan is dropped with the main one.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @replanned
// OFF-LABEL: func.func @replanned
func.func @replanned(%x: tensor<?x512xbf16>, %w: tensor<512x256xbf16>) -> tensor<?x256xbf16> {
  // CHECK: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8
  // OFF: fusion.fused_matmul
  // OFF-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256
  // OFF-NOT: kernel_small_m
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config}}
  // expected-remark @below {{small-M GEMM kernel on sm_90a}}
  %y = fusion.fused_matmul %x, %w {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 2, cluster_n = 1, consumers = 2, smem_bytes = 82944>} : tensor<?x512xbf16>, tensor<512x256xbf16> -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}
