// A sandwich norm's residual stream, `x + norm(linear(a))` (Gemma 2 / 3,
// OLMo 2: the norm after the projection, its output added to the stream),
// becomes one fused_matmul whose norm epilogue adds x as its post_residual
// (fusion-fuse forms the norm epilogue, fusion-plan-kernels post-residuals
// folds the add):
// each function runs on the CPU on the same random inputs before and after
// (the sum rounded once instead of the norm's output and then the sum:
// within a bf16 ulp).
// RUN: fusion-runner %s -e olmo2 --after-passes='fusion-fuse,fusion-plan-kernels{post-residuals=true}' --atol=3e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e layer_norm_bias --after-passes='fusion-fuse,fusion-plan-kernels{post-residuals=true}' --atol=3e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e wide --after-passes='fusion-fuse,fusion-plan-kernels{post-residuals=true}' --atol=3e-2 --rtol=1e-2 | FileCheck %s
// The rewrite happened, in every function:
// RUN: fusion-opt %s -fusion-fuse "-fusion-plan-kernels=post-residuals=true" | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: x left out differs.
// RUN: not fusion-runner %s -e olmo2 --compare=olmo2_without_x --atol=3e-2 --rtol=1e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-3: post_residual(
// IR-NOT: fusion.add

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// OLMo 2's attention output: h = x + rms_norm(o_proj(a)) (nn.Linear's
// [out, in] weight, no bias), a row one CTA holds.
func.func @olmo2(%a: tensor<33x128xbf16>, %w: tensor<64x128xbf16>, %g: tensor<64xbf16>, %x: tensor<33x64xbf16>) -> tensor<33x64xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<33x128xbf16>, tensor<64x128xbf16> -> tensor<33x64xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<33x64xbf16> -> tensor<33x64xbf16>
  %h = fusion.add %x, %n : tensor<33x64xbf16>
  return %h : tensor<33x64xbf16>
}
func.func @olmo2_without_x(%a: tensor<33x128xbf16>, %w: tensor<64x128xbf16>, %g: tensor<64xbf16>, %x: tensor<33x64xbf16>) -> tensor<33x64xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<33x128xbf16>, tensor<64x128xbf16> -> tensor<33x64xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<33x64xbf16> -> tensor<33x64xbf16>
  return %n : tensor<33x64xbf16>
}
// A linear with its bias, a LayerNorm with weight and bias, the stream on
// the add's right.
func.func @layer_norm_bias(%a: tensor<17x96xbf16>, %w: tensor<80x96xbf16>, %b: tensor<80xbf16>,
                           %g: tensor<80xbf16>, %beta: tensor<80xbf16>, %x: tensor<17x80xbf16>) -> tensor<17x80xbf16> {
  %p = fusion.matmul %a, %w bias(%b : tensor<80xbf16>) {transpose_rhs} : tensor<17x96xbf16>, tensor<80x96xbf16> -> tensor<17x80xbf16>
  %n, %mean, %rstd = fusion.layer_norm %p weight(%g : tensor<80xbf16>) bias(%beta : tensor<80xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<17x80xbf16> -> tensor<17x80xbf16>, tensor<17xf32>, tensor<17xf32>
  %h = fusion.add %n, %x : tensor<17x80xbf16>
  return %h : tensor<17x80xbf16>
}
// A row wider than one CTA's tile (rows through global memory on the GPU).
func.func @wide(%a: tensor<9x64xbf16>, %w: tensor<2304x64xbf16>, %g: tensor<2304xbf16>, %x: tensor<9x2304xbf16>) -> tensor<9x2304xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<9x64xbf16>, tensor<2304x64xbf16> -> tensor<9x2304xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<2304xbf16>) {epsilon = 1.0e-06 : f32} : tensor<9x2304xbf16> -> tensor<9x2304xbf16>
  %h = fusion.add %x, %n : tensor<9x2304xbf16>
  return %h : tensor<9x2304xbf16>
}
}
