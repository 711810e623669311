// A norm whose input has other users is fused into the GEMM epilogue with
// save_norm_input, and those users read the saved input: each function runs
// on the CPU on the same random inputs before and after the pass. The
// training steps are bench/layers/gen_layers.py's train_step (linear ->
// norm -> linear, forward and backward in one function, the backward's norm
// gradient reading h), small and static. The f32 ones check the rewrite
// (1e-4). The bf16 ones differ by the norm reading the f32 accumulator
// instead of h rounded to bf16 (what the kernels do too): about one bf16
// ulp in some normalized values, which the second GEMM's 1024- and
// 2048-term sums (outputs of magnitude ~10, ulp 0.0625) carry as a few
// hundredths (0.25 at most measured); hence atol 0.5 there.
// RUN: fusion-runner %s -e train_step_rms --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_rms_bf16 --after-passes=fusion-epilogue-norm --atol=0.5 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln_bf16 --after-passes=fusion-epilogue-norm --atol=0.5 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e residual_sum_used --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e user_before_norm --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln_bf16 --after-passes=fusion-fuse --atol=0.5 --rtol=5e-2 | FileCheck %s
// RUN: fusion-opt %s -fusion-epilogue-norm | FileCheck %s --check-prefix=IR
// CHECK: PASS
// IR-LABEL: func.func @train_step_rms(
// IR: %{{.*}}, %[[H:.*]], %[[R:.*]] = fusion.fused_matmul
// IR-SAME: save_norm_input, save_stats
// IR-NOT: fusion.rms_norm %
// IR: fusion.rms_norm_grad %{{.*}}, %[[H]], %[[R]]
// IR-LABEL: func.func @train_step_ln(
// IR: %{{.*}}, %[[H:.*]], %[[S:.*]]:2 = fusion.fused_matmul
// IR: fusion.layer_norm_grad %{{.*}}, %[[H]], %[[S]]#0, %[[S]]#1
// IR-LABEL: func.func @residual_sum_used(
// IR: %[[Y:.*]], %[[H:.*]] = fusion.fused_matmul %{{.*}}, %{{.*}} residual
// IR-NOT: fusion.add
// IR: return %[[Y]], %[[H]]
// IR-LABEL: func.func @user_before_norm(
// IR: %{{.*}}, %[[H:.*]] = fusion.fused_matmul
// IR-NEXT: fusion.mul %[[H]]
// IR-NOT: fusion.rms_norm %

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

// LayerNorm with weight and bias, N = 512 (a cluster of 2 on sm_90a).
func.func @train_step_ln(%x: tensor<32x64xf32>, %w1: tensor<512x64xf32>, %gamma: tensor<512xf32>, %beta: tensor<512xf32>, %w2: tensor<128x512xf32>, %dy: tensor<32x128xf32>)
    -> (tensor<32x128xf32>, tensor<32x64xf32>, tensor<512x64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<128x512xf32>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x64xf32>, tensor<512x64xf32> -> tensor<32x512xf32>
  %n, %mean, %rstd = fusion.layer_norm %h weight(%gamma : tensor<512xf32>) bias(%beta : tensor<512xf32>) {epsilon = 1.000000e-12 : f32} : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x512xf32>, tensor<128x512xf32> -> tensor<32x128xf32>
  %dn = fusion.matmul %dy, %w2 : tensor<32x128xf32>, tensor<128x512xf32> -> tensor<32x512xf32>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<32x128xf32>, tensor<32x512xf32> -> tensor<128x512xf32>
  %dh, %dgamma, %dbeta = fusion.layer_norm_grad %dn, %h, %mean, %rstd weight(%gamma : tensor<512xf32>) {with_bias_grad} : tensor<32x512xf32>, tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32x512xf32>, tensor<512xf32>, tensor<512xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x512xf32>, tensor<512x64xf32> -> tensor<32x64xf32>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x512xf32>, tensor<32x64xf32> -> tensor<512x64xf32>
  return %y, %dx, %dw1, %dgamma, %dbeta, %dw2 : tensor<32x128xf32>, tensor<32x64xf32>, tensor<512x64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<128x512xf32>
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

// N = 2048: rows through global memory on sm_90a.
func.func @train_step_ln_bf16(%x: tensor<32x64xbf16>, %w1: tensor<2048x64xbf16>, %gamma: tensor<2048xbf16>, %beta: tensor<2048xbf16>, %w2: tensor<128x2048xbf16>, %dy: tensor<32x128xbf16>)
    -> (tensor<32x128xbf16>, tensor<32x64xbf16>, tensor<2048x64xbf16>, tensor<2048xf32>, tensor<2048xf32>, tensor<128x2048xbf16>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<32x64xbf16>, tensor<2048x64xbf16> -> tensor<32x2048xbf16>
  %n, %mean, %rstd = fusion.layer_norm %h weight(%gamma : tensor<2048xbf16>) bias(%beta : tensor<2048xbf16>) {epsilon = 1.000000e-12 : f32} : tensor<32x2048xbf16> -> tensor<32x2048xbf16>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x2048xbf16>, tensor<128x2048xbf16> -> tensor<32x128xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<32x128xbf16>, tensor<128x2048xbf16> -> tensor<32x2048xbf16>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<32x128xbf16>, tensor<32x2048xbf16> -> tensor<128x2048xbf16>
  %dh, %dgamma, %dbeta = fusion.layer_norm_grad %dn, %h, %mean, %rstd weight(%gamma : tensor<2048xbf16>) {with_bias_grad} : tensor<32x2048xbf16>, tensor<32x2048xbf16>, tensor<32xf32>, tensor<32xf32> -> tensor<32x2048xbf16>, tensor<2048xf32>, tensor<2048xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<32x2048xbf16>, tensor<2048x64xbf16> -> tensor<32x64xbf16>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<32x2048xbf16>, tensor<32x64xbf16> -> tensor<2048x64xbf16>
  return %y, %dx, %dw1, %dgamma, %dbeta, %dw2 : tensor<32x128xbf16>, tensor<32x64xbf16>, tensor<2048x64xbf16>, tensor<2048xf32>, tensor<2048xf32>, tensor<128x2048xbf16>
}

// A pre-norm block's residual stream: the sum enters the norm and is
// returned (the next block's residual); the GEMM result is used by the sum
// only.
func.func @residual_sum_used(%a: tensor<32x64xf32>, %b: tensor<64x256xf32>, %r: tensor<32x256xf32>, %w: tensor<256xf32>)
    -> (tensor<32x256xf32>, tensor<32x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<32x64xf32>, tensor<64x256xf32> -> tensor<32x256xf32>
  %s = fusion.add %c, %r : tensor<32x256xf32>
  %y = fusion.rms_norm %s weight(%w : tensor<256xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>
  return %y, %s : tensor<32x256xf32>, tensor<32x256xf32>
}

// The GEMM result's other user comes before the norm: the fused op is
// placed right after the GEMM.
func.func @user_before_norm(%a: tensor<32x64xf32>, %b: tensor<64x256xf32>, %m: tensor<32x256xf32>)
    -> (tensor<32x256xf32>, tensor<32x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<32x64xf32>, tensor<64x256xf32> -> tensor<32x256xf32>
  %p = fusion.mul %c, %m : tensor<32x256xf32>
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>
  return %y, %p : tensor<32x256xf32>, tensor<32x256xf32>
}
}
