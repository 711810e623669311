// REQUIRES: ptxas
// Test the GEMM epilogue norm over column groups (norm_group_size: the
// per-head norm of Qwen3's and Gemma 3's q_norm / k_norm) on sm_90a: one CTA
// per tile of whole groups, the consumers' register epilogue (no cluster, no
// epilogue warps), statistics per row and group through a flat view of the
// [M, N / G] result, and every variant assembles with ptxas without spills:
// RMSNorm over heads of 128 (tiles of 256 holding 2 heads) with and without
// statistics and with the saved norm input, heads of 256, a LayerNorm with
// weight and bias over heads of 64, heads of 32 in N = 96 (a tile of 128
// whose last group lies past N: the column-checked copy), an f32 output, and
// a Lazy Pre-Norm prologue before the heads' norm (a decoder layer's input
// RMSNorm in q_proj, fusion-fuse's form of Qwen3's attention inputs). The
// grouped RMSNorm scales each pair by its group's rstd as it is stored, so
// the saved norm input (stored after the norm) is the unnormalized value;
// the grouped LayerNorm normalizes in place after storing it and, with it,
// spills as the single-CTA LayerNorm does (ptxas-save-norm-input-sm90a.mlir).
// RUN: fusion-opt %s "--fusion-plan-kernels=small-m=false" | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s "--fusion-plan-kernels=small-m=false" --convert-fusion-to-gpu | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s "--fusion-to-gpu=format=isa small-m=false" > %t.isa.mlir
// (small-m=false: the small-M body of dynamic token counts is tested in
// Dialect/Fusion/Transforms/plan-kernels-small-m.mlir and
// Conversion/FusionToGPU/small-m-sm90a.mlir.)
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// CHECK-DAG: ptxas ok: rms_g128_2048_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_g128_1024_infer_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_g256_1024_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_g64_512_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_g128_saved_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_g32_96_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_g128_f32_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: lazy_rms_g128_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_g128_saved_kernel0 registers=168 spills=192
// CHECK-NOT: FAILED
// PLAN-LABEL: func.func @rms_g128_2048(
// PLAN: tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1
// PLAN-NOT: epilogue_warps
// PLAN-SAME: norm_group_size = 128
// PLAN-LABEL: func.func @rms_g32_96(
// PLAN: tile_n = 128, tile_k = 64, stages = 6, cluster_n = 1
// IR-LABEL: func.func @rms_g128_2048(
// IR: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?xf32> to memref<?xf32>
// IR: gpu.launch_func {{.*}}@rms_g128_2048_kernel0 {{.*}}%[[FLAT]] : memref<?xf32>
// (No row exchange between CTAs; the pair along M, cluster_m, shares B's
// tiles only.)
// IR-NOT: st.async
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_g128_2048(%a: tensor<?x2048xbf16>, %b: tensor<2048x2048xbf16>, %w: tensor<128xbf16>) -> (tensor<?x2048xbf16>, tensor<?x16xf32>) {
  %y, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, save_stats, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>, tensor<?x16xf32>
  return %y, %s0 : tensor<?x2048xbf16>, tensor<?x16xf32>
}
func.func @rms_g128_1024_infer(%a: tensor<?x2048xbf16>, %b: tensor<1024x2048xbf16>, %w: tensor<128xbf16>) -> tensor<?x1024xbf16> {
  %y = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<1024x2048xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
func.func @rms_g256_1024(%a: tensor<?x1024xbf16>, %b: tensor<1024x1024xbf16>, %w: tensor<256xbf16>) -> (tensor<?x1024xbf16>, tensor<?x4xf32>) {
  %y, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 256 : i64, save_stats, transpose_rhs}
      : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>, tensor<?x4xf32>
  return %y, %s0 : tensor<?x1024xbf16>, tensor<?x4xf32>
}
func.func @ln_g64_512(%a: tensor<?x512xbf16>, %b: tensor<512x512xbf16>, %w: tensor<64xbf16>, %nb: tensor<64xbf16>) -> (tensor<?x512xbf16>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %y, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<64xbf16>) norm_bias(%nb : tensor<64xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 64 : i64, save_stats, transpose_rhs}
      : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xbf16>, tensor<?x8xf32>, tensor<?x8xf32>
  return %y, %s0, %s1 : tensor<?x512xbf16>, tensor<?x8xf32>, tensor<?x8xf32>
}
func.func @rms_g128_saved(%a: tensor<?x2048xbf16>, %b: tensor<2048x2048xbf16>, %w: tensor<128xbf16>) -> (tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x16xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, save_norm_input, save_stats, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16> saved_norm_input(tensor<?x2048xbf16>), tensor<?x16xf32>
  return %y, %h, %s0 : tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x16xf32>
}
func.func @rms_g32_96(%a: tensor<?x256xbf16>, %b: tensor<96x256xbf16>, %w: tensor<32xbf16>) -> (tensor<?x96xbf16>, tensor<?x3xf32>) {
  %y, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<32xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 32 : i64, save_stats, transpose_rhs}
      : tensor<?x256xbf16>, tensor<96x256xbf16> -> tensor<?x96xbf16>, tensor<?x3xf32>
  return %y, %s0 : tensor<?x96xbf16>, tensor<?x3xf32>
}
func.func @ln_g128_f32(%a: tensor<?x256xbf16>, %b: tensor<512x256xbf16>, %w: tensor<128xf32>) -> (tensor<?x512xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %y, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xf32>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 128 : i64, save_stats, transpose_rhs}
      : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  return %y, %s0, %s1 : tensor<?x512xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}
func.func @lazy_rms_g128(%a: tensor<?x2048xbf16>, %b: tensor<2048x2048xbf16>, %w: tensor<128xbf16>) -> tensor<?x2048xbf16> {
  %y = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xbf16>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32,
       epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
func.func @ln_g128_saved(%a: tensor<?x1024xbf16>, %b: tensor<1024x1024xbf16>, %w: tensor<128xbf16>, %nb: tensor<128xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xbf16>) norm_bias(%nb : tensor<128xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 128 : i64, save_norm_input, save_stats, transpose_rhs}
      : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16> saved_norm_input(tensor<?x1024xbf16>), tensor<?x8xf32>, tensor<?x8xf32>
  return %y, %h, %s0, %s1 : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x8xf32>, tensor<?x8xf32>
}
}
