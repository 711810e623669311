// The whole fusion pipeline keeps the program's values: a transformer-style
// block and a forward+backward training step run on the CPU on the same random
// inputs before and after fusion-fuse (with regroup-backward, which is off by
// default until the GPU kernels have grad epilogues).
// RUN: fusion-runner %s -e block --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e block_bf16 --after-passes='fusion-fuse{regroup-backward=true}' --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e train_step --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln_residual --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// And by default (the norms of the training steps stay for their gradients):
// RUN: fusion-runner %s -e train_step --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e train_step_ln --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// Every norm was fused:
// RUN: fusion-opt %s '-fusion-fuse=regroup-backward=true' | FileCheck %s --check-prefix=IR
// CHECK: PASS
// IR-NOT: fusion.rms_norm
// IR-NOT: fusion.layer_norm
// IR-NOT: _grad
// IR-LABEL: func.func @block(
// IR-COUNT-2: fusion.fused_matmul
// IR-LABEL: func.func @block_bf16(
// IR-COUNT-2: fusion.fused_matmul
// IR-LABEL: func.func @train_step(
// IR: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<rms_norm>
// IR: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<rms_norm_grad>
// IR-LABEL: func.func @train_step_ln(
// IR: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<layer_norm>
// IR: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<layer_norm_grad>
// IR-LABEL: func.func @train_step_ln_residual(
// IR: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<layer_norm>
// IR: fusion.fused_matmul {{.*}} residual({{.*}}epilogue = #fusion.epilogue<layer_norm_grad>

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Pre-norm -> linear -> linear -> residual -> post-norm.
func.func @block(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %w1: tensor<64x128xf32>,
                 %w2: tensor<128x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<32x64xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %h = fusion.matmul %n, %w1 : tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>
  %o = fusion.matmul %h, %w2 : tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>
  %s = fusion.add %o, %x : tensor<32x64xf32>
  %y, %m, %r = fusion.layer_norm %s weight(%w : tensor<64xf32>) bias(%b : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xf32>
}

func.func @block_bf16(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<64x128xbf16>,
                      %w2: tensor<128x64xbf16>) -> tensor<32x64xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xbf16>) {epsilon = 1.0e-05 : f32} : tensor<32x64xbf16> -> tensor<32x64xbf16>
  %h = fusion.matmul %n, %w1 : tensor<32x64xbf16>, tensor<64x128xbf16> -> tensor<32x128xbf16>
  %o = fusion.matmul %h, %w2 : tensor<32x128xbf16>, tensor<128x64xbf16> -> tensor<32x64xbf16>
  %s = fusion.add %x, %o : tensor<32x64xbf16>
  %y = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<32x64xbf16> -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// Linear -> RMSNorm -> linear, forward and backward (as autodiff writes it).
func.func @train_step(%x: tensor<32x48xf32>, %w1: tensor<48x256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<32x16xf32>)
    -> (tensor<32x16xf32>, tensor<32x48xf32>, tensor<48x256xf32>, tensor<256x16xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<32x48xf32>, tensor<48x256xf32> -> tensor<32x256xf32>
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %h, %w2 : tensor<32x256xf32>, tensor<256x16xf32> -> tensor<32x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<32x16xf32>, tensor<256x16xf32> -> tensor<32x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>
  %dw2 = fusion.matmul %h, %dy {transpose_lhs} : tensor<32x256xf32>, tensor<32x16xf32> -> tensor<256x16xf32>
  %dx = fusion.matmul %dz, %w1 {transpose_rhs} : tensor<32x256xf32>, tensor<48x256xf32> -> tensor<32x48xf32>
  %dw1 = fusion.matmul %x, %dz {transpose_lhs} : tensor<32x48xf32>, tensor<32x256xf32> -> tensor<48x256xf32>
  return %y, %dx, %dw1, %dw2 : tensor<32x16xf32>, tensor<32x48xf32>, tensor<48x256xf32>, tensor<256x16xf32>
}

// Linear -> LayerNorm -> linear, forward and backward, N = 512 (a cluster of 2).
func.func @train_step_ln(%x: tensor<32x48xf32>, %w1: tensor<48x512xf32>, %w2: tensor<512x16xf32>, %dy: tensor<32x16xf32>)
    -> (tensor<32x16xf32>, tensor<32x48xf32>, tensor<48x512xf32>, tensor<512x16xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<32x48xf32>, tensor<48x512xf32> -> tensor<32x512xf32>
  %h, %m, %r = fusion.layer_norm %z {epsilon = 1.0e-05 : f32} : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %h, %w2 : tensor<32x512xf32>, tensor<512x16xf32> -> tensor<32x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<32x16xf32>, tensor<512x16xf32> -> tensor<32x512xf32>
  %dz = fusion.layer_norm_grad %dh, %z, %m, %r : tensor<32x512xf32>, tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32x512xf32>
  %dw2 = fusion.matmul %h, %dy {transpose_lhs} : tensor<32x512xf32>, tensor<32x16xf32> -> tensor<512x16xf32>
  %dx = fusion.matmul %dz, %w1 {transpose_rhs} : tensor<32x512xf32>, tensor<48x512xf32> -> tensor<32x48xf32>
  %dw1 = fusion.matmul %x, %dz {transpose_lhs} : tensor<32x48xf32>, tensor<32x512xf32> -> tensor<48x512xf32>
  return %y, %dx, %dw1, %dw2 : tensor<32x16xf32>, tensor<32x48xf32>, tensor<48x512xf32>, tensor<512x16xf32>
}

// The same whose norm gradient adds the gradient along a skip connection
// (its residual operand): the grad epilogue adds it as the fused op's
// residual.
func.func @train_step_ln_residual(%x: tensor<32x48xf32>, %w1: tensor<48x512xf32>, %w2: tensor<512x16xf32>,
                                  %dy: tensor<32x16xf32>, %dskip: tensor<32x512xf32>)
    -> (tensor<32x16xf32>, tensor<32x48xf32>, tensor<48x512xf32>, tensor<512x16xf32>) {
  %z = fusion.matmul %x, %w1 : tensor<32x48xf32>, tensor<48x512xf32> -> tensor<32x512xf32>
  %h, %m, %r = fusion.layer_norm %z {epsilon = 1.0e-05 : f32} : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %h, %w2 : tensor<32x512xf32>, tensor<512x16xf32> -> tensor<32x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<32x16xf32>, tensor<512x16xf32> -> tensor<32x512xf32>
  %dz = fusion.layer_norm_grad %dh, %z, %m, %r residual(%dskip : tensor<32x512xf32>)
      : tensor<32x512xf32>, tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32x512xf32>
  %dw2 = fusion.matmul %h, %dy {transpose_lhs} : tensor<32x512xf32>, tensor<32x16xf32> -> tensor<512x16xf32>
  %dx = fusion.matmul %dz, %w1 {transpose_rhs} : tensor<32x512xf32>, tensor<48x512xf32> -> tensor<32x48xf32>
  %dw1 = fusion.matmul %x, %dz {transpose_lhs} : tensor<32x48xf32>, tensor<32x512xf32> -> tensor<48x512xf32>
  return %y, %dx, %dw1, %dw2 : tensor<32x16xf32>, tensor<32x48xf32>, tensor<48x512xf32>, tensor<512x16xf32>
}
}
