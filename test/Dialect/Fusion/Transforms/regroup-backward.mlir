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

// An affine weight makes the norm's output differ from x_hat: only the
// backward is regrouped, its gradient in the epilogue of the dgrad GEMM
// reading the norm's input z, its rstd and its weight, and returning dg;
// the forward norm stays.
// CHECK-LABEL: func.func @affine
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32>, %[[W1:.*]]: tensor<32x256xf32>, %[[G:.*]]: tensor<256xf32>, %[[W2:.*]]: tensor<256x16xf32>, %[[DY:.*]]: tensor<64x16xf32>)
// CHECK: %[[Z:.*]] = fusion.matmul %[[X]], %[[W1]]
// CHECK: %[[H:.*]], %[[RSTD:.*]] = fusion.rms_norm %[[Z]] weight(%[[G]]
// CHECK: %[[DZ:.*]], %[[DG:.*]] = fusion.fused_matmul %[[DY]], %[[W2]] norm_weight(%[[G]] : tensor<256xf32>) norm_input(%[[Z]] : tensor<64x256xf32>) rstd(%[[RSTD]] : tensor<64xf32>)
// CHECK-SAME: epilogue = #fusion.epilogue<rms_norm_grad>, transpose_rhs
// CHECK-NOT: normalized_input
// CHECK-NOT: fusion.rms_norm_grad
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @affine(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>, %g: tensor<256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<64x16xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped (backward only): the norm has an affine weight or bias, so its output is not x_hat; its gradient went into the epilogue of the dgrad GEMM producing its incoming gradient, reading its input and saved statistics; one CTA holds the whole row (N = 256)}}
  %h, %rstd = fusion.rms_norm %z weight(%g : tensor<256xf32>) {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<256x16xf32> -> tensor<64x256xf32>
  %dz, %dg = fusion.rms_norm_grad %dh, %z, %rstd weight(%g : tensor<256xf32>) : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>, tensor<256xf32>
  return %h, %dz, %dg : tensor<64x256xf32>, tensor<64x256xf32>, tensor<256xf32>
}
}

// -----

// LayerNorm with weight and bias (bf16, N = 1024: a cluster of 4): mean and
// rstd read, dgamma and dbeta returned.
// CHECK-LABEL: func.func @affine_ln
// CHECK: fusion.layer_norm
// CHECK: %{{.*}}, %{{.*}}:2 = fusion.fused_matmul {{.*}}norm_weight({{.*}}) norm_input({{.*}}) mean({{.*}}) rstd({{.*}}) {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @affine_ln(%z: tensor<64x1024xbf16>, %g: tensor<1024xbf16>, %beta: tensor<1024xbf16>, %w2: tensor<16x1024xbf16>, %dy: tensor<64x16xbf16>)
    -> (tensor<64x1024xbf16>, tensor<64x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>) {
  // expected-remark @below {{fusion.layer_norm regrouped (backward only): the norm has an affine weight or bias, so its output is not x_hat; its gradient went into the epilogue of the dgrad GEMM producing its incoming gradient, reading its input and saved statistics; a cluster of 4 CTAs along N, 256 columns each, exchanging partial sums through DSMEM}}
  %h, %m, %r = fusion.layer_norm %z weight(%g : tensor<1024xbf16>) bias(%beta : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>, tensor<64xf32>, tensor<64xf32>
  %dh = fusion.matmul %dy, %w2 : tensor<64x16xbf16>, tensor<16x1024xbf16> -> tensor<64x1024xbf16>
  %dz, %dg, %db = fusion.layer_norm_grad %dh, %z, %m, %r weight(%g : tensor<1024xbf16>) {with_bias_grad} : tensor<64x1024xbf16>, tensor<64x1024xbf16>, tensor<64xf32>, tensor<64xf32> -> tensor<64x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>
  return %h, %dz, %dg, %db : tensor<64x1024xbf16>, tensor<64x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>
}
}

// -----

// Not regrouped: a bf16 row of 2048 columns exchanges its sums through
// global memory, which the grad epilogue does not have.
// CHECK-LABEL: func.func @too_wide
// CHECK: fusion.rms_norm_grad
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @too_wide(%z: tensor<64x2048xbf16>, %g: tensor<2048xbf16>, %w2: tensor<16x2048xbf16>, %dy: tensor<64x16xbf16>)
    -> (tensor<64x2048xbf16>, tensor<64x2048xbf16>, tensor<2048xf32>) {
  // expected-remark @below {{fusion.rms_norm not regrouped: the grad epilogue exchanges a row's sums within a cluster only, and a row of N = 2048 needs the global-memory exchange (CTAs of 256 columns each, exchanging partial statistics through global memory (each tile waits in shared memory until its row block's statistics are complete))}}
  %h, %r = fusion.rms_norm %z weight(%g : tensor<2048xbf16>) {epsilon = 1.0e-05 : f32} : tensor<64x2048xbf16> -> tensor<64x2048xbf16>, tensor<64xf32>
  %dh = fusion.matmul %dy, %w2 : tensor<64x16xbf16>, tensor<16x2048xbf16> -> tensor<64x2048xbf16>
  %dz, %dg = fusion.rms_norm_grad %dh, %z, %r weight(%g : tensor<2048xbf16>) : tensor<64x2048xbf16>, tensor<64x2048xbf16>, tensor<64xf32> -> tensor<64x2048xbf16>, tensor<2048xf32>
  return %h, %dz, %dg : tensor<64x2048xbf16>, tensor<64x2048xbf16>, tensor<2048xf32>
}
}

// -----

// Not regrouped: the gradient does not take the forward norm's weight.
// CHECK-LABEL: func.func @weight_mismatch
// CHECK: fusion.rms_norm_grad
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @weight_mismatch(%z: tensor<64x256xf32>, %g: tensor<256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<64x16xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  // expected-remark @below {{fusion.rms_norm not regrouped: the norm gradient does not take the forward norm's weight}}
  %h, %r = fusion.rms_norm %z weight(%g : tensor<256xf32>) {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<256x16xf32> -> tensor<64x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %r : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>
  return %h, %dz : tensor<64x256xf32>, tensor<64x256xf32>
}
}

// -----

// A norm gradient with a residual (the gradient along a skip connection):
// the grad epilogue adds it to dx as the fused op's residual.
// CHECK-LABEL: func.func @grad_with_residual
// CHECK-SAME: %[[RES:[^:]*]]: tensor<64x256xf32>)
// CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} residual(%[[RES]] : tensor<64x256xf32>) norm_input(
// CHECK-SAME: epilogue = #fusion.epilogue<rms_norm_grad>
// CHECK-NOT: fusion.rms_norm_grad
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad_with_residual(%x: tensor<64x32xf32>, %w1: tensor<32x256xf32>, %w2: tensor<256x16xf32>,
                              %dy: tensor<64x16xf32>, %res: tensor<64x256xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm regrouped: forward fused into the epilogue of the GEMM producing its input}}
  %h, %r = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<64x16xf32>, tensor<256x16xf32> -> tensor<64x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %r residual(%res : tensor<64x256xf32>)
      : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<64x256xf32>
  return %h, %dz : tensor<64x256xf32>, tensor<64x256xf32>
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

// -----

// The row dot reads the next layer's bias beside y as its shift, in y's
// element type: a bias of another type leaves the exchange form.
// CHECK-LABEL: func.func @rms_step_next_bias_f32
// CHECK: fusion.fused_matmul {{.*}}norm_input({{.*}}) rstd({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>}
// CHECK-NOT: row_dot
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_step_next_bias_f32(%h: tensor<64x256xbf16>, %g: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xf32>, %dy: tensor<64x128xbf16>)
    -> (tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm regrouped (backward only): the norm has an affine weight or bias}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-06 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<64xf32>
  %y = fusion.matmul %n, %w2 bias(%b2 : tensor<128xf32>) {transpose_rhs} : tensor<64x256xbf16>, tensor<128x256xbf16> -> tensor<64x128xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xbf16>) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64xf32> -> tensor<64x256xbf16>, tensor<256xf32>
  return %y, %dh, %dg : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<256xf32>
}
}

// -----

// A bf16 step whose next layer has a bias of y's type: the bias is the row
// dot's shift.
// CHECK-LABEL: func.func @rms_step_next_bias
// CHECK-SAME: %[[B2:[^:]*]]: tensor<128xbf16>
// CHECK: row_dot(%{{.*}} : tensor<64x128xbf16>) row_dot_shift(%[[B2]] : tensor<128xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>}
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_step_next_bias(%h: tensor<64x256xbf16>, %g: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>, %dy: tensor<64x128xbf16>)
    -> (tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm regrouped (backward only, row dot)}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-06 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<64xf32>
  %y = fusion.matmul %n, %w2 bias(%b2 : tensor<128xbf16>) {transpose_rhs} : tensor<64x256xbf16>, tensor<128x256xbf16> -> tensor<64x128xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xbf16>) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64xf32> -> tensor<64x256xbf16>, tensor<256xf32>
  return %y, %dh, %dg : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<256xf32>
}
}

// -----

// The next layer computed after the gradient: the fused op, built where the
// gradient was, cannot read its output, so the exchange form.
// CHECK-LABEL: func.func @rms_step_next_after_grad
// CHECK: fusion.fused_matmul {{.*}}norm_input({{.*}}) rstd({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>}
// CHECK-NOT: row_dot
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_step_next_after_grad(%h: tensor<64x256xbf16>, %g: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %dy: tensor<64x128xbf16>)
    -> (tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm regrouped (backward only): the norm has an affine weight or bias}}
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-06 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<64xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xbf16>) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64xf32> -> tensor<64x256xbf16>, tensor<256xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<64x256xbf16>, tensor<128x256xbf16> -> tensor<64x128xbf16>
  return %y, %dh, %dg : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<256xf32>
}
}
