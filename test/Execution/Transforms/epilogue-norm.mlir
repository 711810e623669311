// The epilogue norm keeps the program's values: each function runs on the CPU
// on the same random inputs before and after the pass.
// RUN: fusion-runner %s -e rms_residual --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_affine_transposed --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e rms_bf16 --after-passes=fusion-epilogue-norm --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-runner %s -e bert_post_norm --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e bert_post_norm_bf16 --after-passes=fusion-epilogue-norm --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-opt %s -fusion-epilogue-norm | FileCheck %s --check-prefix=IR
// RUN: not fusion-runner %s -e rms_residual --compare=rms_no_residual --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-5: fusion.fused_matmul
// IR-NOT: fusion.rms_norm
// IR-NOT: fusion.layer_norm

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_residual(%a: tensor<32x64xf32>, %b: tensor<64x512xf32>, %r: tensor<32x512xf32>, %w: tensor<512xf32>) -> (tensor<32x512xf32>, tensor<32xf32>) {
  %c = fusion.matmul %a, %b : tensor<32x64xf32>, tensor<64x512xf32> -> tensor<32x512xf32>
  %s = fusion.add %r, %c : tensor<32x512xf32>
  %y, %rstd = fusion.rms_norm %s weight(%w : tensor<512xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>
  return %y, %rstd : tensor<32x512xf32>, tensor<32xf32>
}

func.func @rms_no_residual(%a: tensor<32x64xf32>, %b: tensor<64x512xf32>, %r: tensor<32x512xf32>, %w: tensor<512xf32>) -> (tensor<32x512xf32>, tensor<32xf32>) {
  %c = fusion.matmul %a, %b : tensor<32x64xf32>, tensor<64x512xf32> -> tensor<32x512xf32>
  %y, %rstd = fusion.rms_norm %c weight(%w : tensor<512xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>
  return %y, %rstd : tensor<32x512xf32>, tensor<32xf32>
}

func.func @ln_affine_transposed(%a: tensor<32x64xf32>, %b: tensor<256x64xf32>, %w: tensor<256xf32>, %bias: tensor<256xf32>) -> (tensor<32x256xf32>, tensor<32xf32>, tensor<32xf32>) {
  %c = fusion.matmul %a, %b {transpose_rhs} : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
  %y, %m, %r = fusion.layer_norm %c weight(%w : tensor<256xf32>) bias(%bias : tensor<256xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>, tensor<32xf32>
  return %y, %m, %r : tensor<32x256xf32>, tensor<32xf32>, tensor<32xf32>
}

func.func @rms_bf16(%a: tensor<32x64xbf16>, %b: tensor<64x1024xbf16>, %r: tensor<32x1024xbf16>) -> tensor<32x1024xbf16> {
  %c = fusion.matmul %a, %b : tensor<32x64xbf16>, tensor<64x1024xbf16> -> tensor<32x1024xbf16>
  %s = fusion.add %c, %r : tensor<32x1024xbf16>
  %y = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<32x1024xbf16> -> tensor<32x1024xbf16>
  return %y : tensor<32x1024xbf16>
}

// The BERT post-norm: linear with bias (col_bias), residual, LayerNorm with
// weight and bias, N = 512 (a cluster of 2 on sm_90a).
func.func @bert_post_norm(%x: tensor<32x64xf32>, %w: tensor<512x64xf32>, %bias: tensor<512xf32>, %r: tensor<32x512xf32>,
                          %g: tensor<512xf32>, %beta: tensor<512xf32>) -> tensor<32x512xf32> {
  %h = fusion.matmul %x, %w bias(%bias : tensor<512xf32>) {transpose_rhs} : tensor<32x64xf32>, tensor<512x64xf32> -> tensor<32x512xf32>
  %s = fusion.add %h, %r : tensor<32x512xf32>
  %y, %m, %rs = fusion.layer_norm %s weight(%g : tensor<512xf32>) bias(%beta : tensor<512xf32>) {epsilon = 1.0e-12 : f32}
      : tensor<32x512xf32> -> tensor<32x512xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x512xf32>
}

func.func @bert_post_norm_bf16(%x: tensor<32x64xbf16>, %w: tensor<256x64xbf16>, %bias: tensor<256xbf16>, %r: tensor<32x256xbf16>,
                               %g: tensor<256xbf16>, %beta: tensor<256xbf16>) -> tensor<32x256xbf16> {
  %h = fusion.matmul %x, %w bias(%bias : tensor<256xbf16>) {transpose_rhs} : tensor<32x64xbf16>, tensor<256x64xbf16> -> tensor<32x256xbf16>
  %s = fusion.add %r, %h : tensor<32x256xbf16>
  %y, %m, %rs = fusion.layer_norm %s weight(%g : tensor<256xbf16>) bias(%beta : tensor<256xbf16>) {epsilon = 1.0e-12 : f32}
      : tensor<32x256xbf16> -> tensor<32x256xbf16>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x256xbf16>
}
}
