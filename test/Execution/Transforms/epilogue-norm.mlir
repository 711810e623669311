// The epilogue norm keeps the program's values: each function runs on the CPU
// on the same random inputs before and after the pass.
// RUN: fusion-runner %s -e rms_residual --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_affine_transposed --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e rms_bf16 --after-passes=fusion-epilogue-norm --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-opt %s -fusion-epilogue-norm | FileCheck %s --check-prefix=IR
// RUN: not fusion-runner %s -e rms_residual --compare=rms_no_residual --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-3: fusion.fused_matmul
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
}
