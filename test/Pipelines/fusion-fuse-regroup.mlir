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
// An RMSNorm with a weight whose output feeds the next layer takes its
// gradient's row sum from that layer's output (row_dot), also for rows too
// wide for a cluster; with the next layer's bias, or regroup-row-dot=false,
// the row exchange form (where the row fits a cluster).
// RUN: fusion-runner %s -e train_step_rms_wide --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// RUN: fusion-runner %s -e train_step_rms_next_bias --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// RUN: fusion-runner %s -e train_step_rms_weight --after-passes='fusion-fuse{regroup-backward=true regroup-row-dot=false}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// RUN: fusion-opt %s '-fusion-fuse=regroup-backward=true regroup-row-dot=false' | FileCheck %s --check-prefix=EXCHANGE
// (In bf16 the regrouped step rounds its incoming gradient once less than the
// unfused one, so the two differ by more than bf16 tolerances on the CPU's
// unscaled random weights; the H200 test compares both with float64.)
// CHECK-LABEL: func.func @train_step
// CHECK: epilogue = #fusion.epilogue<rms_norm>
// CHECK: epilogue = #fusion.epilogue<rms_norm_grad>
// CHECK-NOT: fusion.rms_norm
// CHECK-LABEL: func.func @train_step_rms_weight
// CHECK: fusion.fused_matmul {{.*}}norm_weight({{.*}}) {epilogue = #fusion.epilogue<rms_norm>{{.*}}save_norm_input
// CHECK: %[[Y:.*]] = fusion.matmul %{{.*}}, %[[W2:[^ ]*]] {transpose_rhs}
// CHECK: fusion.fused_matmul %[[DY:[^,]*]], %[[W2]] norm_weight({{.*}}) norm_input({{.*}}) rstd({{.*}}) row_dot(%[[Y]] : tensor<32x256xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
// CHECK-NOT: fusion.rms_norm_grad
// EXCHANGE-LABEL: func.func @train_step_rms_weight
// EXCHANGE: fusion.fused_matmul {{.*}}norm_weight({{.*}}) norm_input({{.*}}) rstd({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>}
// EXCHANGE-NOT: row_dot
// EXCHANGE-LABEL: func.func @train_step_ln_affine
// LayerNorm's row dots: y less beta W2^T, and w W2^T (1-row GEMMs in f32).
// CHECK-LABEL: func.func @train_step_ln_affine(
// CHECK-SAME: %{{[^:]*}}: tensor<32x48xf32>, %{{[^:]*}}: tensor<512x48xf32>, %[[GAMMA:[^:]*]]: tensor<512xf32>, %[[BETA:[^:]*]]: tensor<512xf32>, %[[W2:[^:]*]]: tensor<512x512xf32>
// CHECK: %[[Y:.*]] = fusion.matmul %{{.*}}, %[[W2]] {transpose_rhs}
// CHECK-DAG: %[[BR:.*]] = tensor.expand_shape %[[BETA]]
// CHECK-DAG: %[[U:.*]] = fusion.matmul %[[BR]], %[[W2]] {transpose_rhs} : tensor<1x512xf32>, tensor<512x512xf32> -> tensor<1x512xf32>
// CHECK-DAG: %[[GR:.*]] = tensor.expand_shape %[[GAMMA]]
// CHECK-DAG: %[[V:.*]] = fusion.matmul %[[GR]], %[[W2]] {transpose_rhs} : tensor<1x512xf32>, tensor<512x512xf32> -> tensor<1x512xf32>
// CHECK: fusion.fused_matmul {{.*}}mean({{.*}}) rstd({{.*}}) row_dot(%[[Y]] : tensor<32x512xf32>) row_dot_shift(%{{.*}} : tensor<512xf32>) row_dot_sum(%{{.*}} : tensor<512xf32>) {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
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
  // expected-remark @below {{fusion.rms_norm regrouped (backward only, row dot): its gradient went into the epilogue of the dgrad GEMM producing its incoming gradient, the row sums over the norm's output taken as row dots of dy with the next layer's output y, over the dgrad's K in its main loop (no row exchange, any row size)}}
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
  // expected-remark @below {{fusion.layer_norm regrouped (backward only, row dot): its gradient went into the epilogue of the dgrad GEMM producing its incoming gradient, the row sums over the norm's output taken as row dots of dy with the next layer's output y and vectors of that layer's weight, over the dgrad's K in its main loop (no row exchange, any row size)}}
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
// Rows of 4096 f32 columns would exchange their sums over a cluster of 16
// (non-portable) CTAs: the row dot needs no exchange.
// CHECK-LABEL: func.func @train_step_rms_wide(
// CHECK: fusion.fused_matmul {{.*}}row_dot({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>}
// CHECK-NOT: fusion.rms_norm_grad
func.func @train_step_rms_wide(%x: tensor<16x32xf32>, %w1: tensor<4096x32xf32>, %g: tensor<4096xf32>, %w2: tensor<64x4096xf32>, %dy: tensor<16x64xf32>)
    -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<4096xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<16x32xf32>, tensor<4096x32xf32> -> tensor<16x4096xf32>
  // expected-remark @below {{fusion.rms_norm regrouped (backward only, row dot)}}
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<4096xf32>) {epsilon = 1.0e-06 : f32} : tensor<16x4096xf32> -> tensor<16x4096xf32>, tensor<16xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<16x4096xf32>, tensor<64x4096xf32> -> tensor<16x64xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<16x64xf32>, tensor<64x4096xf32> -> tensor<16x4096xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<4096xf32>) : tensor<16x4096xf32>, tensor<16x4096xf32>, tensor<16xf32> -> tensor<16x4096xf32>, tensor<4096xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<16x4096xf32>, tensor<4096x32xf32> -> tensor<16x32xf32>
  return %y, %dx, %dg : tensor<16x64xf32>, tensor<16x32xf32>, tensor<4096xf32>
}
// The next layer's bias (y = n W2^T + b2) is the row dot's shift.
// CHECK-LABEL: func.func @train_step_rms_next_bias(
// CHECK-SAME: %[[B2:[^:]*]]: tensor<128xf32>, %{{[^:]*}}: tensor<32x128xf32>)
// CHECK: fusion.fused_matmul {{.*}}row_dot(%{{.*}} : tensor<32x128xf32>) row_dot_shift(%[[B2]] : tensor<128xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
// A next layer whose output is only added to a skip connection (its GEMM
// stores the sum) gives no row dot: rows that need the global-memory
// exchange are then not regrouped.
// CHECK-LABEL: func.func @train_step_rms_skip_wide(
// CHECK: fusion.rms_norm_grad
func.func @train_step_rms_next_bias(%x: tensor<32x48xf32>, %w1: tensor<256x48xf32>, %g: tensor<256xf32>, %w2: tensor<128x256xf32>, %b2: tensor<128xf32>, %dy: tensor<32x128xf32>)
    -> (tensor<32x128xf32>, tensor<32x48xf32>, tensor<256xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x48xf32>, tensor<256x48xf32> -> tensor<32x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped (backward only, row dot)}}
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 bias(%b2 : tensor<128xf32>) {transpose_rhs} : tensor<32x256xf32>, tensor<128x256xf32> -> tensor<32x128xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<32x128xf32>, tensor<128x256xf32> -> tensor<32x256xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xf32>) : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x256xf32>, tensor<256x48xf32> -> tensor<32x48xf32>
  return %y, %dx, %dg : tensor<32x128xf32>, tensor<32x48xf32>, tensor<256xf32>
}
// bf16 rows of 2048 columns need the global-memory exchange, which the
// grad epilogue does not have; y = fc2(n) + h gives no row dot.
func.func @train_step_rms_skip_wide(%h: tensor<16x2048xbf16>, %g: tensor<2048xbf16>, %w2: tensor<2048x2048xbf16>, %dy: tensor<16x2048xbf16>)
    -> (tensor<16x2048xbf16>, tensor<16x2048xbf16>, tensor<2048xf32>) {
  // expected-remark @below {{are complete)); no row dot: the next layer's output is only added to a skip connection (its GEMM stores the sum, not the output)}}
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue}}
  // expected-remark @below {{fusion.rms_norm not fused as a Lazy Pre-Norm prologue}}
  // expected-remark @below {{fusion.rms_norm weight not folded: its input has a reader other than the norm and its gradient (the step would save it anyway)}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<2048xbf16>) {epsilon = 1.0e-06 : f32} : tensor<16x2048xbf16> -> tensor<16x2048xbf16>, tensor<16xf32>
  %f = fusion.matmul %n, %w2 {transpose_rhs} : tensor<16x2048xbf16>, tensor<2048x2048xbf16> -> tensor<16x2048xbf16>
  %y = fusion.add %f, %h : tensor<16x2048xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<16x2048xbf16>, tensor<2048x2048xbf16> -> tensor<16x2048xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<2048xbf16>) residual(%dy : tensor<16x2048xbf16>) : tensor<16x2048xbf16>, tensor<16x2048xbf16>, tensor<16xf32> -> tensor<16x2048xbf16>, tensor<2048xf32>
  return %y, %dh, %dg : tensor<16x2048xbf16>, tensor<16x2048xbf16>, tensor<2048xf32>
}
}
