// Tests that fusion ops run through convert-fusion-to-linalg: a hand-computed
// rms_norm, and fusion.add + fusion.rms_norm against the same formula written
// with upstream ops.

// RUN: fusion-runner %s -e rms_norm_const | FileCheck %s --check-prefix=CONST
// RUN: fusion-runner %s -e residual_norm --compare=residual_norm_upstream --atol=1e-2 --rtol=1e-2 | FileCheck %s --check-prefix=CMP
// RUN: fusion-runner %s -e residual_norm --input-offset=3 --compare=residual_norm_upstream --atol=1e-2 --rtol=1e-2 | FileCheck %s --check-prefix=CMP

// x = [3, 4]: rstd = 1 / sqrt((9 + 16) / 2) = 0.282843, y = [0.848528, 1.13137].
// CONST: result 0: tensor<1x2xf32> = {{\[\[}}0.848528, 1.13137]]
// CONST: result 1: tensor<1xf32> = [0.282843]
func.func @rms_norm_const() -> (tensor<1x2xf32>, tensor<1xf32>) {
  %x = arith.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  %y, %rstd = fusion.rms_norm %x {epsilon = 0.0 : f32}
      : tensor<1x2xf32> -> tensor<1x2xf32>, tensor<1xf32>
  return %y, %rstd : tensor<1x2xf32>, tensor<1xf32>
}

// CMP: result 0: {{.*}} mismatches=0/512 (atol=0.01, rtol=0.01)
// CMP-NEXT: PASS
func.func @residual_norm(%x: tensor<16x32xbf16>, %r: tensor<16x32xbf16>, %w: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %h = fusion.add %x, %r : tensor<16x32xbf16>
  %y = fusion.rms_norm %h weight(%w : tensor<32xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<16x32xbf16> -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// h = x + r (rounded to bf16), y = h * rsqrt(mean(h^2) + eps) * w in f32.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @residual_norm_upstream(%x: tensor<16x32xbf16>, %r: tensor<16x32xbf16>, %w: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %xf = arith.extf %x : tensor<16x32xbf16> to tensor<16x32xf32>
  %rf = arith.extf %r : tensor<16x32xbf16> to tensor<16x32xf32>
  %hf = arith.addf %xf, %rf : tensor<16x32xf32>
  %hb = arith.truncf %hf : tensor<16x32xf32> to tensor<16x32xbf16>
  %h = arith.extf %hb : tensor<16x32xbf16> to tensor<16x32xf32>
  %z = arith.constant dense<0.0> : tensor<16xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<16x32xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %e = tensor.empty() : tensor<16x32xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %ss, %w : tensor<16x32xf32>, tensor<16xf32>, tensor<32xbf16>) outs(%e : tensor<16x32xbf16>) {
  ^bb0(%v: f32, %s: f32, %wb: bf16, %out: bf16):
    %n = arith.constant 32.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %ms = arith.divf %s, %n : f32
    %mse = arith.addf %ms, %eps : f32
    %rstd = math.rsqrt %mse : f32
    %wf = arith.extf %wb : bf16 to f32
    %t = arith.mulf %v, %rstd : f32
    %o = arith.mulf %t, %wf : f32
    %ob = arith.truncf %o : f32 to bf16
    linalg.yield %ob : bf16
  } -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
