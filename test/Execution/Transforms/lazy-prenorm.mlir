// Lazy Pre-Norm keeps the program's values: each function runs on the CPU on
// the same random inputs before and after the pass.
// RUN: fusion-runner %s -e rms_f32 --after-passes=fusion-lazy-prenorm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e rms_weight_f32 --after-passes=fusion-lazy-prenorm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e rms_weight_transposed_f32 --after-passes=fusion-lazy-prenorm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e rms_bf16 --after-passes=fusion-lazy-prenorm --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-runner %s -e ln_f32 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e rms_linear_bias_f32 --after-passes=fusion-lazy-prenorm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_linear_bias_f32 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_linear_bias_bf16 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e ln_constant_f32 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-4 --rtol=1e-4 | FileCheck %s
// The pass really changed the program (the fused form differs from the
// unfused one in the last bits: bf16 rounding of the normalized A is skipped):
// RUN: fusion-opt %s -fusion-lazy-prenorm | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the same program with another epsilon.
// RUN: not fusion-runner %s -e rms_f32 --compare=rms_f32_other_eps --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-6: fusion.fused_matmul
// IR-NOT: fusion.rms_norm

func.func @rms_f32(%x: tensor<32x64xf32>, %b1: tensor<64x48xf32>, %b2: tensor<64x16xf32>) -> (tensor<32x48xf32>, tensor<32x16xf32>) {
  %n = fusion.rms_norm %x {epsilon = 1.0e-06 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %c1 = fusion.matmul %n, %b1 : tensor<32x64xf32>, tensor<64x48xf32> -> tensor<32x48xf32>
  %c2 = fusion.matmul %n, %b2 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  return %c1, %c2 : tensor<32x48xf32>, tensor<32x16xf32>
}

func.func @rms_f32_other_eps(%x: tensor<32x64xf32>, %b1: tensor<64x48xf32>, %b2: tensor<64x16xf32>) -> (tensor<32x48xf32>, tensor<32x16xf32>) {
  %n = fusion.rms_norm %x {epsilon = 1.0e-01 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %c1 = fusion.matmul %n, %b1 : tensor<32x64xf32>, tensor<64x48xf32> -> tensor<32x48xf32>
  %c2 = fusion.matmul %n, %b2 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  return %c1, %c2 : tensor<32x48xf32>, tensor<32x16xf32>
}

func.func @rms_weight_f32(%x: tensor<32x64xf32>, %b: tensor<64x48xf32>, %g: tensor<64xf32>) -> tensor<32x48xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %c = fusion.matmul %n, %b : tensor<32x64xf32>, tensor<64x48xf32> -> tensor<32x48xf32>
  return %c : tensor<32x48xf32>
}

func.func @rms_weight_transposed_f32(%x: tensor<32x64xf32>, %b: tensor<48x64xf32>, %g: tensor<64xf32>) -> tensor<32x48xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %c = fusion.matmul %n, %b {transpose_rhs} : tensor<32x64xf32>, tensor<48x64xf32> -> tensor<32x48xf32>
  return %c : tensor<32x48xf32>
}

func.func @rms_bf16(%x: tensor<32x64xbf16>, %b: tensor<64x48xbf16>, %g: tensor<64xbf16>) -> tensor<32x48xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xbf16>) {epsilon = 1.0e-05 : f32} : tensor<32x64xbf16> -> tensor<32x64xbf16>
  %c = fusion.matmul %n, %b : tensor<32x64xbf16>, tensor<64x48xbf16> -> tensor<32x48xbf16>
  return %c : tensor<32x48xbf16>
}

func.func @ln_f32(%x: tensor<32x64xf32>, %b: tensor<64x48xf32>, %w: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<32x48xf32> {
  %n, %m, %r = fusion.layer_norm %x weight(%w : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  %c = fusion.matmul %n, %b : tensor<32x64xf32>, tensor<64x48xf32> -> tensor<32x48xf32>
  return %c : tensor<32x48xf32>
}

// An RMSNorm weight before a linear with bias, B [K, N]: the weight is
// folded by a fusion.mul with g as [K, 1], the bias is the column bias.
func.func @rms_linear_bias_f32(%x: tensor<32x64xf32>, %b: tensor<64x48xf32>, %g: tensor<64xf32>, %bias: tensor<48xf32>) -> tensor<32x48xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %c = fusion.matmul %n, %b bias(%bias : tensor<48xf32>) : tensor<32x64xf32>, tensor<64x48xf32> -> tensor<32x48xf32>
  return %c : tensor<32x48xf32>
}

// A LayerNorm with weight and bias before two linears, one with a bias
// (weight [N, K]): beta W^T by a 1-row fusion.matmul, plus the bias.
func.func @ln_linear_bias_f32(%x: tensor<32x64xf32>, %w1: tensor<48x64xf32>, %bias: tensor<48xf32>, %w2: tensor<16x64xf32>,
                              %g: tensor<64xf32>, %beta: tensor<64xf32>) -> (tensor<32x48xf32>, tensor<32x16xf32>) {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  %c1 = fusion.matmul %n, %w1 bias(%bias : tensor<48xf32>) {transpose_rhs} : tensor<32x64xf32>, tensor<48x64xf32> -> tensor<32x48xf32>
  %c2 = fusion.matmul %n, %w2 {transpose_rhs} : tensor<32x64xf32>, tensor<16x64xf32> -> tensor<32x16xf32>
  return %c1, %c2 : tensor<32x48xf32>, tensor<32x16xf32>
}

func.func @ln_linear_bias_bf16(%x: tensor<32x64xbf16>, %w: tensor<48x64xbf16>, %bias: tensor<48xbf16>,
                               %g: tensor<64xbf16>, %beta: tensor<64xbf16>) -> tensor<32x48xbf16> {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xbf16>) bias(%beta : tensor<64xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<32xf32>, tensor<32xf32>
  %c = fusion.matmul %n, %w bias(%bias : tensor<48xbf16>) {transpose_rhs} : tensor<32x64xbf16>, tensor<48x64xbf16> -> tensor<32x48xbf16>
  return %c : tensor<32x48xbf16>
}

// Constant weights, beta and bias: folded at compile time into B and one
// column-bias constant.
func.func @ln_constant_f32(%x: tensor<8x4xf32>) -> tensor<8x2xf32> {
  %b = arith.constant dense<[[1.0, 2.0], [3.0, -4.0], [0.5, 0.25], [-1.0, 1.5]]> : tensor<4x2xf32>
  %g = arith.constant dense<[2.0, -0.5, 1.0, 0.75]> : tensor<4xf32>
  %beta = arith.constant dense<[0.1, -0.2, 0.3, 0.4]> : tensor<4xf32>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<4xf32>) bias(%beta : tensor<4xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x4xf32> -> tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %b bias(%bias : tensor<2xf32>) : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  return %c : tensor<8x2xf32>
}
