// The training step with LayerNorm (weight gamma, bias beta) between the
// linears, written with the dialect's unfused ops, 256 tokens: lowers whole
// to the GPU. The first GEMM with the LayerNorm in its epilogue, also
// storing h for the backward (save_norm_input) and mean and rstd, the
// second forward GEMM, two dgrad GEMMs, the norm's gradient (dx kernel,
// then the dgamma / dbeta reduction) and two weight gradients dy^T x,
// which split their 4 K steps into 2 ranges (split-K, on by default: one
// output tile for 132 SMs), each followed by its in-order sum kernel: ten
// launches (eleven with the standalone LayerNorm before save_norm_input).
// On the CPU the step computes the same before and after fusion-fuse and
// fusion-plan-kernels, to bf16 rounding: the fused norm reads the f32
// accumulator, not h rounded to bf16, and the second GEMMs carry that ulp
// (0.125 at most measured, outputs of magnitude ~10; hence atol 0.25).
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln --after-passes=fusion-fuse,fusion-plan-kernels --atol=0.25 --rtol=5e-2 | FileCheck %s --check-prefix=CPU
// CHECK-LABEL: func.func @train_step_ln
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel0 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel1 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel2 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel3 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel3_splitk 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel4 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel4_params 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel5 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel6 
// CHECK: gpu.launch_func {{.*}}@train_step_ln_kernel6_splitk 
// CHECK-NOT: gpu.launch_func
// CHECK: return
// CPU: PASS
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @train_step_ln(%x: tensor<256x128xbf16>, %w1: tensor<128x128xbf16>, %gamma: tensor<128xbf16>, %beta: tensor<128xbf16>, %w2: tensor<128x128xbf16>, %dy: tensor<256x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<128x128xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128x128xbf16>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<256x128xbf16>, tensor<128x128xbf16> -> tensor<256x128xbf16>
  %n, %mean, %rstd = fusion.layer_norm %h weight(%gamma : tensor<128xbf16>) bias(%beta : tensor<128xbf16>) {epsilon = 1.0e-05 : f32} : tensor<256x128xbf16> -> tensor<256x128xbf16>, tensor<256xf32>, tensor<256xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<256x128xbf16>, tensor<128x128xbf16> -> tensor<256x128xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<256x128xbf16>, tensor<128x128xbf16> -> tensor<256x128xbf16>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<256x128xbf16>, tensor<256x128xbf16> -> tensor<128x128xbf16>
  %dh, %dgamma, %dbeta = fusion.layer_norm_grad %dn, %h, %mean, %rstd weight(%gamma : tensor<128xbf16>) {with_bias_grad} : tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<256xf32>, tensor<256xf32> -> tensor<256x128xbf16>, tensor<128xf32>, tensor<128xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<256x128xbf16>, tensor<128x128xbf16> -> tensor<256x128xbf16>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<256x128xbf16>, tensor<256x128xbf16> -> tensor<128x128xbf16>
  return %y, %dx, %dw1, %dgamma, %dbeta, %dw2 : tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<128x128xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128x128xbf16>
}
}
