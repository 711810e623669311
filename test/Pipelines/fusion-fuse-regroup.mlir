// fusion-fuse{regroup-backward=true}: regrouping claims a training step's
// forward/backward norm pair first (the forward norm in the first GEMM's
// epilogue, its gradient in the dgrad GEMM's), and the result computes the
// same on the CPU. (Off by default: the GPU kernels have no grad epilogue
// yet, and the default pipeline must keep the step runnable there:
// fusion-fuse-report.mlir, train-step-sm90a.mlir.)
// RUN: fusion-opt %s '-fusion-fuse=report=true regroup-backward=true' -verify-diagnostics | FileCheck %s
// RUN: fusion-runner %s -e train_step --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// With the norms' weights (RMSNorm; LayerNorm with weight and bias): only
// the backward is regrouped, reading the norm's input and statistics.
// RUN: fusion-runner %s -e train_step_rms_weight --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// RUN: fusion-runner %s -e train_step_ln_affine --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// (In bf16 the regrouped step rounds its incoming gradient once less than the
// unfused one, so the two differ by more than bf16 tolerances on the CPU's
// unscaled random weights; the H200 test compares both with float64.)
// CHECK-LABEL: func.func @train_step
// CHECK: epilogue = #fusion.epilogue<rms_norm>
// CHECK: epilogue = #fusion.epilogue<rms_norm_grad>
// CHECK-NOT: fusion.rms_norm
// CHECK-LABEL: func.func @train_step_rms_weight
// CHECK: fusion.fused_matmul {{.*}}norm_weight({{.*}}) {epilogue = #fusion.epilogue<rms_norm>{{.*}}save_norm_input
// CHECK: fusion.fused_matmul {{.*}}norm_weight({{.*}}) norm_input({{.*}}) rstd({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>}
// CHECK-NOT: fusion.rms_norm_grad
// CHECK-LABEL: func.func @train_step_ln_affine(
// CHECK: fusion.fused_matmul {{.*}}mean({{.*}}) rstd({{.*}}) {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
// CPU: PASS
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @train_step(%x: tensor<32x48xf32>, %w1: tensor<48x256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<32x16xf32>)
    -> (tensor<32x16xf32>, tensor<32x256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<32x48xf32>, tensor<48x256xf32> -> tensor<32x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped: forward fused into the epilogue of the GEMM producing its input, backward into the epilogue of the dgrad GEMM producing its incoming gradient; one CTA holds the whole row (N = 256)}}
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %h, %w2 : tensor<32x256xf32>, tensor<256x16xf32> -> tensor<32x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<32x16xf32>, tensor<256x16xf32> -> tensor<32x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>
  return %y, %dz : tensor<32x16xf32>, tensor<32x256xf32>
}
func.func @train_step_rms_weight(%x: tensor<32x48xf32>, %w1: tensor<256x48xf32>, %g: tensor<256xf32>, %w2: tensor<256x256xf32>, %dy: tensor<32x256xf32>)
    -> (tensor<32x256xf32>, tensor<32x48xf32>, tensor<256x48xf32>, tensor<256xf32>, tensor<256x256xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x48xf32>, tensor<256x48xf32> -> tensor<32x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped (backward only): the norm has an affine weight or bias, so its output is not x_hat; its gradient went into the epilogue of the dgrad GEMM producing its incoming gradient, reading its input and saved statistics; one CTA holds the whole row (N = 256)}}
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul, also storing its input (the GEMM result) for its 1 other user (save_norm_input): one CTA holds the whole row (N = 256)}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x256xf32>, tensor<256x256xf32> -> tensor<32x256xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<32x256xf32>, tensor<256x256xf32> -> tensor<32x256xf32>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<32x256xf32>, tensor<32x256xf32> -> tensor<256x256xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xf32>) : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x256xf32>, tensor<256x48xf32> -> tensor<32x48xf32>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x256xf32>, tensor<32x48xf32> -> tensor<256x48xf32>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<32x256xf32>, tensor<32x48xf32>, tensor<256x48xf32>, tensor<256xf32>, tensor<256x256xf32>
}
func.func @train_step_ln_affine(%x: tensor<32x48xf32>, %w1: tensor<512x48xf32>, %gamma: tensor<512xf32>, %beta: tensor<512xf32>, %w2: tensor<512x512xf32>, %dy: tensor<32x512xf32>)
    -> (tensor<32x512xf32>, tensor<32x48xf32>, tensor<512x48xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x48xf32>, tensor<512x48xf32> -> tensor<32x512xf32>
  // expected-remark @below {{fusion.layer_norm regrouped (backward only): the norm has an affine weight or bias, so its output is not x_hat; its gradient went into the epilogue of the dgrad GEMM producing its incoming gradient, reading its input and saved statistics; a cluster of 2 CTAs along N, 256 columns each, exchanging partial sums through DSMEM}}
  // expected-remark @below {{fusion.layer_norm fused into the epilogue of a fusion.fused_matmul, also storing its input (the GEMM result) for its 1 other user (save_norm_input): a cluster of 2 CTAs along N, 256 columns each, exchanging partial sums through DSMEM}}
  %n, %mean, %rstd = fusion.layer_norm %h weight(%gamma : tensor<512xf32>) bias(%beta : tensor<512xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x512xf32>, tensor<512x512xf32> -> tensor<32x512xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<32x512xf32>, tensor<512x512xf32> -> tensor<32x512xf32>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<32x512xf32>, tensor<32x512xf32> -> tensor<512x512xf32>
  %dh, %dgamma, %dbeta = fusion.layer_norm_grad %dn, %h, %mean, %rstd weight(%gamma : tensor<512xf32>) {with_bias_grad} : tensor<32x512xf32>, tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32x512xf32>, tensor<512xf32>, tensor<512xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x512xf32>, tensor<512x48xf32> -> tensor<32x48xf32>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x512xf32>, tensor<32x48xf32> -> tensor<512x48xf32>
  return %y, %dx, %dw1, %dgamma, %dbeta, %dw2 : tensor<32x512xf32>, tensor<32x48xf32>, tensor<512x48xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512x512xf32>
}
}
