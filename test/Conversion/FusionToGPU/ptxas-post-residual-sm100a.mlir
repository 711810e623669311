// REQUIRES: ptxas
// Test that the sm_100a norm epilogues with a post_residual (a sandwich
// norm's residual stream, x + norm(linear(a)): Gemma 2 / 3, OLMo 2)
// assemble without spilling in every form the planner gives them: a row one
// CTA's tensor memory holds (256 columns: RMSNorm, LayerNorm with a linear
// bias, a per-head norm of 128; 512 with an f32 output) and clusters (768
// as 2 x 384, 2304, Gemma 2's hidden size, as 8 x 320, 4096 as 8 x 512);
// the epilogue warpgroup's last pass adds the residual's 8 columns from
// global memory. Not run (no B200).
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels=post-residuals=true --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels=post-residuals=true | FileCheck %s --check-prefix=FORMS
// FORMS-COUNT-7: post_residual(
// FORMS-NOT: fusion.add
// CHECK-DAG: ptxas ok: olmo2_h256_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: layer_norm_bias_h256_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: f32_cluster_h512_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: head_norm_h2048_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: cluster_h768_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gemma2_h2304_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: layer_norm_h4096_kernel0 registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @olmo2_h256(%a: tensor<?x256xbf16>, %w: tensor<256x256xbf16>, %g: tensor<256xbf16>, %x: tensor<?x256xbf16>) -> tensor<?x256xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<256xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %h = fusion.add %x, %n : tensor<?x256xbf16>
  return %h : tensor<?x256xbf16>
}
func.func @layer_norm_bias_h256(%a: tensor<?x512xbf16>, %w: tensor<256x512xbf16>, %b: tensor<256xbf16>, %g: tensor<256xbf16>, %beta: tensor<256xbf16>, %x: tensor<?x256xbf16>) -> tensor<?x256xbf16> {
  %p = fusion.matmul %a, %w bias(%b : tensor<256xbf16>) {transpose_rhs} : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
  %n, %mean, %rstd = fusion.layer_norm %p weight(%g : tensor<256xbf16>) bias(%beta : tensor<256xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>, tensor<?xf32>
  %h = fusion.add %n, %x : tensor<?x256xbf16>
  return %h : tensor<?x256xbf16>
}
func.func @f32_cluster_h512(%a: tensor<?x512xbf16>, %w: tensor<512x512xbf16>, %g: tensor<512xf32>, %x: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %y = fusion.fused_matmul %a, %w norm_weight(%g : tensor<512xf32>) post_residual(%x : tensor<?x512xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
      : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}
func.func @head_norm_h2048(%a: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>, %x: tensor<?x2048xbf16>) -> tensor<?x2048xbf16> {
  %y = fusion.fused_matmul %a, %w norm_weight(%g : tensor<128xbf16>) post_residual(%x : tensor<?x2048xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
func.func @cluster_h768(%a: tensor<?x768xbf16>, %w: tensor<768x768xbf16>, %g: tensor<768xbf16>, %x: tensor<?x768xbf16>) -> tensor<?x768xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x768xbf16>, tensor<768x768xbf16> -> tensor<?x768xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<768xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x768xbf16> -> tensor<?x768xbf16>
  %h = fusion.add %x, %n : tensor<?x768xbf16>
  return %h : tensor<?x768xbf16>
}
func.func @gemma2_h2304(%a: tensor<?x2048xbf16>, %w: tensor<2304x2048xbf16>, %g: tensor<2304xf32>, %x: tensor<?x2304xbf16>) -> tensor<?x2304xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x2048xbf16>, tensor<2304x2048xbf16> -> tensor<?x2304xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<2304xf32>) {epsilon = 1.0e-06 : f32} : tensor<?x2304xbf16> -> tensor<?x2304xbf16>
  %h = fusion.add %x, %n : tensor<?x2304xbf16>
  return %h : tensor<?x2304xbf16>
}
func.func @layer_norm_h4096(%a: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>, %g: tensor<4096xbf16>, %beta: tensor<4096xbf16>, %x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  %n, %mean, %rstd = fusion.layer_norm %p weight(%g : tensor<4096xbf16>) bias(%beta : tensor<4096xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>
  %h = fusion.add %x, %n : tensor<?x4096xbf16>
  return %h : tensor<?x4096xbf16>
}
}
