// RUN: fusion-opt %s -fusion-fuse=report=true -verify-diagnostics -split-input-file | FileCheck %s
// Test that fusion-fuse tells, for every norm, what it was fused into, with
// which strategy, or why not, in pipeline order.

// A transformer-style block: the pre-norm has no producing GEMM, so it becomes
// a Lazy Pre-Norm prologue; the post-norm rides in the second GEMM's epilogue.
// CHECK-LABEL: func.func @block
// CHECK: %[[H:.*]] = fusion.fused_matmul %{{.*}}, %{{.*}} {prologue = #fusion.prologue<rms_norm>
// CHECK: fusion.fused_matmul %[[H]], %{{.*}} residual({{.*}}) {epilogue = #fusion.epilogue<layer_norm>
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @block(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %w1: tensor<64x128xf32>, %w2: tensor<128x64xf32>) -> tensor<32x64xf32> {
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input is not produced by a fusion.matmul (or a fusion.add of one)}}
  // expected-remark @below {{fusion.rms_norm fused as a Lazy Pre-Norm prologue into 1 fusion.fused_matmul op(s); weight folded into B by a fusion.mul (a device step per call)}}
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %h = fusion.matmul %n, %w1 : tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>
  %o = fusion.matmul %h, %w2 : tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>
  %s = fusion.add %o, %x : tensor<32x64xf32>
  // expected-remark @below {{fusion.layer_norm fused into the epilogue of a fusion.fused_matmul with its residual: one CTA holds the whole row (N = 64)}}
  %y, %m, %r = fusion.layer_norm %s {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xf32>
}
}

// -----

// A training step: regrouping would claim the forward/backward pair first,
// but it is off in fusion-fuse until the GPU kernels have grad epilogues
// (fusion-fuse-regroup.mlir turns it on); the other passes then leave the
// norm alone, since its input and statistics feed the backward.
// CHECK-LABEL: func.func @train_step
// CHECK: %{{.*}}, %[[H:.*]], %[[R:.*]] = fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<rms_norm>{{.*}}save_norm_input
// CHECK: fusion.rms_norm_grad %{{.*}}, %[[H]], %[[R]]
// CHECK-NOT: fusion.fused_matmul {{.*}}epilogue
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @train_step(%x: tensor<32x48xf32>, %w1: tensor<48x256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<32x16xf32>)
    -> (tensor<32x16xf32>, tensor<32x256xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<32x48xf32>, tensor<48x256xf32> -> tensor<32x256xf32>
  // expected-remark @below {{fusion.rms_norm not regrouped: regrouping is opt-in in fusion-fuse until the sm_90a grad epilogue warps are measured on the H200 (fusion-fuse{regroup-backward=true} applies it; one CTA holds the whole row (N = 256))}}
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul, also storing its input (the GEMM result) for its 1 other user (save_norm_input): one CTA holds the whole row (N = 256)}}
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %h, %w2 : tensor<32x256xf32>, tensor<256x16xf32> -> tensor<32x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<32x16xf32>, tensor<256x16xf32> -> tensor<32x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>
  return %y, %dz : tensor<32x16xf32>, tensor<32x256xf32>
}
}

// -----

// A norm nothing can host: every pass says why.
// CHECK-LABEL: func.func @alone
// CHECK: fusion.rms_norm
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @alone(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input is not produced by a fusion.matmul (or a fusion.add of one)}}
  // expected-remark @below {{fusion.rms_norm not fused as a Lazy Pre-Norm prologue: 'func.return' uses the normalized tensor other than as the left operand of a fusion.matmul (or, for RMSNorm, of a fusion.fused_matmul with a norm epilogue and no prologue), so the norm would stay}}
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}
}

// -----

// The BERT post-norm with its bias written as a separate add: the raise step
// folds the bias into the matmul, the epilogue takes it as col_bias.
// CHECK-LABEL: func.func @bert_post_norm
// CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} residual(%{{.*}}) col_bias(%{{.*}} : tensor<64xbf16>) norm_weight(%{{.*}}) norm_bias(%{{.*}})
// CHECK-NOT: fusion.add
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @bert_post_norm(%x: tensor<32x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %res: tensor<32x64xbf16>,
                          %g: tensor<64xbf16>, %beta: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %h0 = fusion.matmul %x, %w {transpose_rhs} : tensor<32x128xbf16>, tensor<64x128xbf16> -> tensor<32x64xbf16>
  %h = fusion.add %h0, %b : tensor<32x64xbf16>, tensor<64xbf16>
  %s = fusion.add %h, %res : tensor<32x64xbf16>
  // expected-remark @below {{fusion.layer_norm fused into the epilogue of a fusion.fused_matmul with the matmul's bias as col_bias and its residual: one CTA holds the whole row (N = 64)}}
  %y, %m, %r = fusion.layer_norm %s weight(%g : tensor<64xbf16>) bias(%beta : tensor<64xbf16>) {epsilon = 1.0e-12 : f32}
      : tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xbf16>
}
}
