// REQUIRES: ptxas
// Test the GEMM epilogue norm over column groups (norm_group_size: a
// per-head norm) on sm_100a: the epilogue warpgroup (a row per thread from
// tensor memory) normalizes the tile's groups one after the other, each over
// its 64-column chunks (pass 1, LayerNorm's pass 2, the last pass), the
// statistics per row and group, the parameters [G] at the column inside the
// group; tiles of 256 columns (two tensor-memory stages); with the saved
// norm input, each group's chunks stored twice (saved, then output). Assembled with
// ptxas for sm_100a, without spills; structurally checked only (no
// Blackwell GPU has run it).
// RUN: fusion-opt %s --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s
// CHECK-DAG: ptxas ok: rms_g128_2048_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_g128_1024_infer_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_g256_1024_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_g64_512_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_g128_f32_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_g128_saved_kernel0 registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED
// PLAN-LABEL: func.func @rms_g128_2048(
// PLAN: tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1
// PLAN-SAME: norm_group_size = 128
// IR-LABEL: gpu.func @rms_g128_2048_kernel0
// The tile's two groups, then their two chunks each.
// IR: scf.for %[[G:.*]] = %c0{{.*}} to %c2{{.*}} step %c1
// IR: %[[FIRST:.*]] = arith.muli %[[G]], %c2
// IR: scf.for %{{.*}} = %[[FIRST]] to %{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
module attributes {fusion.target = #fusion.target<"sm_100a">} {
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
func.func @ln_g128_f32(%a: tensor<?x256xbf16>, %b: tensor<512x256xbf16>, %w: tensor<128xf32>) -> (tensor<?x512xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %y, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xf32>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 128 : i64, save_stats, transpose_rhs}
      : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  return %y, %s0, %s1 : tensor<?x512xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}
func.func @rms_g128_saved(%a: tensor<?x2048xbf16>, %b: tensor<2048x2048xbf16>, %w: tensor<128xbf16>) -> (tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x16xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, save_norm_input, save_stats, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16> saved_norm_input(tensor<?x2048xbf16>), tensor<?x16xf32>
  return %y, %h, %s0 : tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x16xf32>
}
}
