// fusion-fuse{regroup-backward=true}: regrouping claims a training step's
// forward/backward norm pair first (the forward norm in the first GEMM's
// epilogue, its gradient in the dgrad GEMM's), and the result computes the
// same on the CPU. (Off by default: the GPU kernels have no grad epilogue
// yet, and the default pipeline must keep the step runnable there:
// fusion-fuse-report.mlir, train-step-sm90a.mlir.)
// RUN: fusion-opt %s '-fusion-fuse=report=true regroup-backward=true' -verify-diagnostics | FileCheck %s
// RUN: fusion-runner %s -e train_step --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=CPU
// CHECK-LABEL: func.func @train_step
// CHECK: epilogue = #fusion.epilogue<rms_norm>
// CHECK: epilogue = #fusion.epilogue<rms_norm_grad>
// CHECK-NOT: fusion.rms_norm
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
}
