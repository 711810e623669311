// fusion-fold-norm-weight: each training step runs on the CPU on the same
// random inputs before and after the pass (and after fusion-fuse with it,
// where the weightless norm becomes the first GEMM's epilogue writing
// x_hat). The steps are bench/layers/gen_layers.py's train_step (linear ->
// RMSNorm with its weight -> linear, forward and backward in one function),
// small and static. In f32 the fold only reassociates products: 1e-4. In
// bf16 x_hat and W diag(g) are rounded where x_hat g was: a bf16 ulp of
// some products, which the second GEMM's 1024-term sums (outputs ~10, ulp
// 0.0625) carry as a few hundredths, hence atol 0.5 as for the epilogue
// norm's bf16 steps (epilogue-norm-save-input.mlir). The negative case
// checks that the comparison sees a lost weight: the fold of a step whose
// weight gradient also skips the scale. The front end's backward (written
// apart from the forward that saved x_hat) scales its weight gradients by g
// itself: the pass makes that fusion.mul the GEMM's col_scale (one rounding
// where there were two; in f32 the same up to reassociation).
// RUN: fusion-runner %s -e train_step_rms --after-passes=fusion-fold-norm-weight --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e two_layers --after-passes=fusion-fold-norm-weight --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_rms_bf16 --after-passes=fusion-fold-norm-weight --atol=0.5 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e front_end_weight_grads --after-passes=fusion-fold-norm-weight --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e scaled_activation --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_rms_bf16 --after-passes='fusion-fuse{fold-norm-weight=true}' --atol=0.5 --rtol=5e-2 | FileCheck %s
// RUN: not fusion-runner %s -e train_step_rms --compare=train_step_rms_unscaled_dw --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=FAIL
// RUN: fusion-opt %s -fusion-fold-norm-weight | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s -fusion-fold-norm-weight | FileCheck %s --check-prefix=COLS
// RUN: fusion-opt %s --fusion-fuse=fold-norm-weight=true | FileCheck %s --check-prefix=FUSED
// CHECK: PASS
// FAIL: FAIL
// IR-LABEL: func.func @train_step_rms(
// IR-SAME: %[[X:[^:]*]]: tensor<32x64xf32>, %[[W1:[^:]*]]: tensor<256x64xf32>, %[[G:[^:]*]]: tensor<256xf32>, %[[W2:[^:]*]]: tensor<128x256xf32>, %[[DY:[^:]*]]: tensor<32x128xf32>
// IR: %[[XH:.*]], %[[R:.*]] = fusion.rms_norm %{{.*}} {epsilon
// IR: %[[WG:.*]] = fusion.mul %[[W2]], %[[G]]
// IR: fusion.matmul %[[XH]], %[[WG]] {transpose_rhs}
// IR: fusion.fused_matmul %[[DY]], %[[XH]] col_scale(%[[G]] : tensor<256xf32>) {transpose_lhs}
// IR: fusion.rms_norm_grad %{{.*}}, %[[XH]], %[[R]] weight(%[[G]] : tensor<256xf32>) {normalized_input}
// COLS-LABEL: func.func @front_end_weight_grads(
// COLS: fusion.fused_matmul %arg0, %arg1 col_scale(%arg2 : tensor<256xf32>) {transpose_lhs}
// COLS: fusion.fused_matmul %arg1, %arg3 col_scale(%arg4 : tensor<128xf32>) {transpose_rhs}
// COLS-NOT: fusion.mul
// COLS: return
// FUSED-LABEL: func.func @train_step_rms_bf16(
// FUSED: %[[XH:.*]], %[[R:.*]] = fusion.fused_matmul
// FUSED-SAME: epilogue = #fusion.epilogue<rms_norm>
// FUSED-NOT: save_norm_input
// FUSED-SAME: -> tensor<32x1024xbf16>, tensor<32xf32>
// FUSED: fusion.rms_norm_grad %{{.*}}, %[[XH]], %[[R]]

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @train_step_rms(%x: tensor<32x64xf32>, %w1: tensor<256x64xf32>, %g: tensor<256xf32>, %w2: tensor<128x256xf32>, %dy: tensor<32x128xf32>)
    -> (tensor<32x128xf32>, tensor<32x64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<128x256xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xf32>) {epsilon = 1.000000e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x256xf32>, tensor<128x256xf32> -> tensor<32x128xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<32x128xf32>, tensor<128x256xf32> -> tensor<32x256xf32>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<32x128xf32>, tensor<32x256xf32> -> tensor<128x256xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xf32>) : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x256xf32>, tensor<256x64xf32> -> tensor<32x64xf32>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x256xf32>, tensor<32x64xf32> -> tensor<256x64xf32>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<32x128xf32>, tensor<32x64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<128x256xf32>
}

// The step as folded by hand, but its weight gradient without the column
// scale: what the comparison must catch.
func.func @train_step_rms_unscaled_dw(%x: tensor<32x64xf32>, %w1: tensor<256x64xf32>, %g: tensor<256xf32>, %w2: tensor<128x256xf32>, %dy: tensor<32x128xf32>)
    -> (tensor<32x128xf32>, tensor<32x64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<128x256xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
  %xh, %rstd = fusion.rms_norm %h {epsilon = 1.000000e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %wg = fusion.mul %w2, %g : tensor<128x256xf32>, tensor<256xf32>
  %y = fusion.matmul %xh, %wg {transpose_rhs} : tensor<32x256xf32>, tensor<128x256xf32> -> tensor<32x128xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<32x128xf32>, tensor<128x256xf32> -> tensor<32x256xf32>
  %dw2 = fusion.matmul %dy, %xh {transpose_lhs} : tensor<32x128xf32>, tensor<32x256xf32> -> tensor<128x256xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %xh, %rstd weight(%g : tensor<256xf32>) {normalized_input} : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x256xf32>, tensor<256x64xf32> -> tensor<32x64xf32>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x256xf32>, tensor<32x64xf32> -> tensor<256x64xf32>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<32x128xf32>, tensor<32x64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<128x256xf32>
}

// One norm feeding two layers (a gated MLP's gate and up projections, with
// a bias on one), each with its weight gradient.
func.func @two_layers(%x: tensor<32x64xf32>, %w1: tensor<256x64xf32>, %g: tensor<256xf32>, %wa: tensor<96x256xf32>, %ba: tensor<96xf32>, %wb: tensor<80x256xf32>, %dya: tensor<32x96xf32>, %dyb: tensor<32x80xf32>)
    -> (tensor<32x96xf32>, tensor<32x80xf32>, tensor<32x64xf32>, tensor<256xf32>, tensor<96x256xf32>, tensor<80x256xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xf32>) {epsilon = 1.000000e-06 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %ya = fusion.matmul %n, %wa bias(%ba : tensor<96xf32>) {transpose_rhs} : tensor<32x256xf32>, tensor<96x256xf32> -> tensor<32x96xf32>
  %yb = fusion.matmul %n, %wb {transpose_rhs} : tensor<32x256xf32>, tensor<80x256xf32> -> tensor<32x80xf32>
  %dna = fusion.matmul %dya, %wa : tensor<32x96xf32>, tensor<96x256xf32> -> tensor<32x256xf32>
  %dnb = fusion.matmul %dyb, %wb : tensor<32x80xf32>, tensor<80x256xf32> -> tensor<32x256xf32>
  %dn = fusion.add %dna, %dnb : tensor<32x256xf32>
  %dwa = fusion.matmul %dya, %n {transpose_lhs} : tensor<32x96xf32>, tensor<32x256xf32> -> tensor<96x256xf32>
  %dwb = fusion.matmul %dyb, %n {transpose_lhs} : tensor<32x80xf32>, tensor<32x256xf32> -> tensor<80x256xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xf32>) : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x256xf32>, tensor<256x64xf32> -> tensor<32x64xf32>
  return %ya, %yb, %dx, %dg, %dwa, %dwb : tensor<32x96xf32>, tensor<32x80xf32>, tensor<32x64xf32>, tensor<256xf32>, tensor<96x256xf32>, tensor<80x256xf32>
}

func.func @train_step_rms_bf16(%x: tensor<32x64xbf16>, %w1: tensor<1024x64xbf16>, %g: tensor<1024xbf16>, %w2: tensor<128x1024xbf16>, %dy: tensor<32x128xbf16>)
    -> (tensor<32x128xbf16>, tensor<32x64xbf16>, tensor<1024x64xbf16>, tensor<1024xf32>, tensor<128x1024xbf16>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x64xbf16>, tensor<1024x64xbf16> -> tensor<32x1024xbf16>
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<1024xbf16>) {epsilon = 1.000000e-05 : f32} : tensor<32x1024xbf16> -> tensor<32x1024xbf16>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x1024xbf16>, tensor<128x1024xbf16> -> tensor<32x128xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<32x128xbf16>, tensor<128x1024xbf16> -> tensor<32x1024xbf16>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<32x128xbf16>, tensor<32x1024xbf16> -> tensor<128x1024xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>) : tensor<32x1024xbf16>, tensor<32x1024xbf16>, tensor<32xf32> -> tensor<32x1024xbf16>, tensor<1024xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x1024xbf16>, tensor<1024x64xbf16> -> tensor<32x64xbf16>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x1024xbf16>, tensor<32x64xbf16> -> tensor<1024x64xbf16>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<32x128xbf16>, tensor<32x64xbf16>, tensor<1024x64xbf16>, tensor<1024xf32>, tensor<128x1024xbf16>
}

// The front end's weight gradient dW = (dy^T x_hat) g, and a forward layer
// whose output is scaled by a vector over its columns: both become their
// GEMM's col_scale.
func.func @front_end_weight_grads(%dy: tensor<32x128xf32>, %xh: tensor<32x256xf32>, %g: tensor<256xf32>, %w: tensor<128x256xf32>, %v: tensor<128xf32>)
    -> (tensor<128x256xf32>, tensor<32x128xf32>) {
  %gw = fusion.matmul %dy, %xh {transpose_lhs} : tensor<32x128xf32>, tensor<32x256xf32> -> tensor<128x256xf32>
  %dw = fusion.mul %gw, %g : tensor<128x256xf32>, tensor<256xf32>
  %p = fusion.matmul %xh, %w {transpose_rhs} : tensor<32x256xf32>, tensor<128x256xf32> -> tensor<32x128xf32>
  %q = fusion.mul %p, %v : tensor<32x128xf32>, tensor<128xf32>
  return %dw, %q : tensor<128x256xf32>, tensor<32x128xf32>
}

// A column scale and then an activation: the scale becomes the GEMM's
// col_scale and the activation stays an op of its own (the fused op takes
// no activation beside a column scale).
func.func @scaled_activation(%x: tensor<32x64xf32>, %w: tensor<128x64xf32>, %v: tensor<128xf32>) -> tensor<32x128xf32> {
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x128xf32>
  %s = fusion.mul %y, %v : tensor<32x128xf32>, tensor<128xf32>
  %a = fusion.activation %s {activation = #fusion.activation<silu>} : tensor<32x128xf32>
  return %a : tensor<32x128xf32>
}
}
