// A whole training step written with the dialect's unfused ops (Linear ->
// RMSNorm with its weight -> Linear, forward and backward given dy, the
// weights as nn.Linear stores them) lowers whole to the GPU: two forward
// GEMMs, the first with the norm in its epilogue, also storing h for the
// backward (save_norm_input) and rstd, two dgrad GEMMs, two weight
// gradients dy^T x (transpose_lhs) and the norm's gradient (dx kernel, then
// the dg reduction): eight launches (nine with the standalone norm before
// save_norm_input), nothing refused. On the CPU the step computes the same
// before and after fusion-fuse and fusion-plan-kernels.
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-runner %s -e train_step --after-passes=fusion-fuse,fusion-plan-kernels --atol=5e-2 --rtol=5e-2 | FileCheck %s --check-prefix=CPU
// CHECK-LABEL: func.func @train_step
// CHECK-COUNT-8: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK: return
// CPU: PASS
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @train_step(%x: tensor<64x128xbf16>, %w1: tensor<128x128xbf16>, %g: tensor<128xbf16>, %w2: tensor<128x128xbf16>, %dy: tensor<64x128xbf16>)
    -> (tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<128x128xbf16>, tensor<128xf32>, tensor<128x128xbf16>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xbf16>
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<128xbf16>) {epsilon = 1.0e-05 : f32} : tensor<64x128xbf16> -> tensor<64x128xbf16>, tensor<64xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xbf16>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<128xbf16>) : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<128xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xbf16>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<128x128xbf16>, tensor<128xf32>, tensor<128x128xbf16>
}
}
