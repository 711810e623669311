// The planner's stats-only rms_norm + row_scale form of a Lazy Pre-Norm GEMM
// (fusion-plan-kernels lazy-row-stats=kernel) keeps the program's values:
// each function runs on the CPU on the same random inputs before and after.
// RUN: fusion-runner %s -e prenorm_bf16 --after-passes=fusion-plan-kernels{lazy-row-stats=kernel} --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-runner %s -e prenorm_bias_residual_bf16 --after-passes=fusion-plan-kernels{lazy-row-stats=kernel} --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-runner %s -e prenorm_transposed_f16 --after-passes=fusion-plan-kernels{lazy-row-stats=kernel} --atol=3e-2 --rtol=3e-2 | FileCheck %s
// The rewrite happened:
// RUN: fusion-opt %s -fusion-plan-kernels=lazy-row-stats=kernel | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: another epsilon differs.
// RUN: not fusion-runner %s -e prenorm_bf16 --compare=prenorm_bf16_other_eps --atol=3e-2 --rtol=3e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-4: epilogue = #fusion.epilogue<row_scale>
// IR-NOT: prologue = #fusion.prologue<rms_norm>

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @prenorm_bf16(%x: tensor<64x128xbf16>, %w: tensor<128x64xbf16>) -> tensor<64x64xbf16> {
  %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-02 : f32}
      : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}
func.func @prenorm_bf16_other_eps(%x: tensor<64x128xbf16>, %w: tensor<128x64xbf16>) -> tensor<64x64xbf16> {
  %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0 : f32}
      : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}
func.func @prenorm_bias_residual_bf16(%x: tensor<64x128xbf16>, %w: tensor<128x192xbf16>, %b: tensor<192xbf16>, %r: tensor<64x192xbf16>) -> tensor<64x192xbf16> {
  %y = fusion.fused_matmul %x, %w residual(%r : tensor<64x192xbf16>) col_bias(%b : tensor<192xbf16>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x128xbf16>, tensor<128x192xbf16> -> tensor<64x192xbf16>
  return %y : tensor<64x192xbf16>
}
func.func @prenorm_transposed_f16(%x: tensor<32x64xf16>, %w: tensor<128x64xf16>) -> tensor<32x128xf16> {
  %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs}
      : tensor<32x64xf16>, tensor<128x64xf16> -> tensor<32x128xf16>
  return %y : tensor<32x128xf16>
}
}
