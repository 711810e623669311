// RUN: fusion-opt %s -split-input-file -fusion-regroup-backward | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-regroup-backward=report=true -verify-diagnostics -o /dev/null

// A training step of linear -> RMSNorm -> linear: the forward norm rides in the
// first GEMM's epilogue (saving rstd), the backward norm in the epilogue of the
// dgrad GEMM dy @ W2^T, reading the forward's normalized output.
// CHECK-LABEL: func.func @rms_step
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32>, %[[W1:.*]]: tensor<32x256xf32>, %[[W2:.*]]: tensor<256x16xf32>, %[[DY:.*]]: tensor<64x16xf32>)
// CHECK: %[[H:.*]], %[[RSTD:.*]] = fusion.fused_matmul %[[X]], %[[W1]] {epilogue = #fusion.epilogue<rms_norm>, epsilon = {{.*}}, save_stats}
// CHECK: %[[Y:.*]] = fusion.matmul %[[H]], %[[W2]]
// CHECK: %[[DZ:.*]] = fusion.fused_matmul %[[DY]], %[[W2]] norm_input(%[[H]] : tensor<64x256xf32>) rstd(%[[RSTD]] : tensor<64xf32>)
// CHECK-SAME: epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs
// CHECK-NOT: fusion.rms_norm
// CHECK: fusion.matmul %[[DZ]], %[[W1]] {transpose_rhs}
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_step(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<64x16xf32>)
    -> (tensor<64x16xf32>, tensor<64x32xf32>, tensor<32x256xf32>, tensor<256x16xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped: forward fused into the epilogue of the GEMM producing its input, backward into the epilogue of the dgrad GEMM producing its incoming gradient; one CTA holds the whole row (N = 256)}}
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %y = fusion.matmul %h, %w2 : tensor<64x256xf32>, tensor<256x16xf32> -> tensor<64x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<256x16xf32> -> tensor<64x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>
  %dw2 = fusion.matmul %h, %dy {transpose_lhs} : tensor<64x256xf32>, tensor<64x16xf32> -> tensor<256x16xf32>
  %dx = fusion.matmul %dz, %w1 {transpose_rhs} : tensor<64x256xf32>, tensor<32x256xf32> -> tensor<64x32xf32>
  %dw1 = fusion.matmul %x, %dz {transpose_lhs} : tensor<64x32xf32>, tensor<64x256xf32> -> tensor<32x256xf32>
  return %y, %dx, %dw1, %dw2 : tensor<64x16xf32>, tensor<64x32xf32>, tensor<32x256xf32>, tensor<256x16xf32>
}
}

// -----

// LayerNorm: both statistics are saved; the backward needs only rstd, and its
// bias gradient is kept.
// CHECK-LABEL: func.func @ln_step
// CHECK: %[[H:.*]], %[[STATS:.*]]:2 = fusion.fused_matmul %{{.*}}, %{{.*}} {epilogue = #fusion.epilogue<layer_norm>, epsilon = {{.*}}, save_stats}
// CHECK: %[[DZ:.*]], %[[DB:.*]] = fusion.fused_matmul %{{.*}}, %{{.*}} norm_input(%[[H]] : tensor<64x512xf32>) rstd(%[[STATS]]#1 : tensor<64xf32>)
// CHECK-SAME: epilogue = #fusion.epilogue<layer_norm_grad>, normalized_input, transpose_rhs, with_bias_grad
// CHECK-NOT: fusion.layer_norm
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln_step(%x: tensor<64x32xf32>, %w1: tensor<32x512xf32>, %w2: tensor<512x16xf32>, %dy: tensor<64x16xf32>)
    -> (tensor<64x16xf32>, tensor<64x512xf32>, tensor<512xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x512xf32> -> tensor<64x512xf32>
  // expected-remark @below {{fusion.layer_norm regrouped: forward fused into the epilogue of the GEMM producing its input, backward into the epilogue of the dgrad GEMM producing its incoming gradient; a cluster of 2 CTAs along N, 256 columns each, exchanging partial sums through DSMEM}}
  %h, %m, %r = fusion.layer_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x512xf32> -> tensor<64x512xf32>, tensor<64xf32>, tensor<64xf32>
  %y = fusion.matmul %h, %w2 : tensor<64x512xf32>, tensor<512x16xf32> -> tensor<64x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<512x16xf32> -> tensor<64x512xf32>
  %dz, %db = fusion.layer_norm_grad %dh, %z, %m, %r {with_bias_grad} : tensor<64x512xf32>, tensor<64x512xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x512xf32>, tensor<512xf32>
  return %y, %dz, %db : tensor<64x16xf32>, tensor<64x512xf32>, tensor<512xf32>
}
}

// -----

// Not regrouped: an affine weight makes the norm's output differ from x_hat.
// CHECK-LABEL: func.func @affine
// CHECK: fusion.rms_norm
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: fusion.fused_matmul
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @affine(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>, %g: tensor<256xf32>, %dh: tensor<64x256xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm not regrouped: the norm has an affine weight or bias, so its output is not the normalized input the backward needs}}
  %h, %rstd = fusion.rms_norm %z weight(%g : tensor<256xf32>) {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %dz, %dg = fusion.rms_norm_grad %dh, %z, %rstd weight(%g : tensor<256xf32>) : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>, tensor<256xf32>
  return %h, %dz, %dg : tensor<64x256xf32>, tensor<64x256xf32>, tensor<256xf32>
}
}

// -----

// Not regrouped: the incoming gradient is a function argument, not a dgrad GEMM.
// CHECK-LABEL: func.func @grad_from_argument
// CHECK: fusion.rms_norm
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: fusion.fused_matmul
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad_from_argument(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>, %dh: tensor<64x256xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm not regrouped: the incoming gradient is not a fusion.matmul result used only by the norm gradient}}
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>
  return %h, %dz : tensor<64x256xf32>, tensor<64x256xf32>
}
}

// -----

// Without a backward, the pass stays silent and changes nothing.
// CHECK-LABEL: func.func @forward_only
// CHECK: fusion.matmul
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.fused_matmul
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @forward_only(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>) -> tensor<64x256xf32> {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  %h = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %h : tensor<64x256xf32>
}
}

// -----

// Not regrouped without a target.
// CHECK-LABEL: func.func @no_target
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: fusion.fused_matmul
func.func @no_target(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<64x16xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm not regrouped: the module has no fusion.target (the row limits depend on it)}}
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<256x16xf32> -> tensor<64x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>
  return %h, %dz : tensor<64x256xf32>, tensor<64x256xf32>
}

// -----

// The forward linear's bias (nn.Linear, weight [N, K]) rides along as the
// forward fused op's col_bias.
// CHECK-LABEL: func.func @rms_step_bias
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32>, %[[W1:.*]]: tensor<256x32xf32>, %[[B1:.*]]: tensor<256xf32>, %[[W2:.*]]: tensor<256x16xf32>, %[[DY:.*]]: tensor<64x16xf32>)
// CHECK: %[[H:.*]], %[[RSTD:.*]] = fusion.fused_matmul %[[X]], %[[W1]] col_bias(%[[B1]] : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = {{.*}}, save_stats, transpose_rhs}
// CHECK: fusion.fused_matmul %[[DY]], %[[W2]] norm_input(%[[H]] : tensor<64x256xf32>) rstd(%[[RSTD]] : tensor<64xf32>)
// CHECK-NOT: fusion.rms_norm
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_step_bias(%x: tensor<64x32xf32>, %w1: tensor<256x32xf32>, %b1: tensor<256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<64x16xf32>)
    -> (tensor<64x16xf32>, tensor<64x256xf32>) {
  %z = fusion.matmul %x, %w1 bias(%b1 : tensor<256xf32>) {transpose_rhs} : tensor<64x32xf32>, tensor<256x32xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped}}
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %y = fusion.matmul %h, %w2 : tensor<64x256xf32>, tensor<256x16xf32> -> tensor<64x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<256x16xf32> -> tensor<64x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>
  return %y, %dz : tensor<64x16xf32>, tensor<64x256xf32>
}
}
