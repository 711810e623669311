// fusion-plan-kernels turns a weight gradient (fusion.matmul with
// transpose_lhs: dW = dy^T x, lhs [tokens, out]) into a fused_matmul that
// keeps transpose_lhs, and the program's values stay: each function runs on
// the CPU on the same random inputs before and after (bf16 with a bias, f16
// with rhs transposed too).
// RUN: fusion-runner %s -e wgrad_bf16 --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-runner %s -e wgrad_bias_bf16 --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=3e-2 | FileCheck %s
// RUN: fusion-runner %s -e wgrad_both_f16 --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=3e-2 | FileCheck %s
// The rewrite happened:
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the transposed result (x^T dy) differs.
// RUN: not fusion-runner %s -e wgrad_bf16 --compare=wgrad_bf16_transposed --atol=3e-2 --rtol=3e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-4: fusion.fused_matmul {{.*}}transpose_lhs

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wgrad_bf16(%dy: tensor<96x64xbf16>, %x: tensor<96x64xbf16>) -> tensor<64x64xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<96x64xbf16>, tensor<96x64xbf16> -> tensor<64x64xbf16>
  return %dw : tensor<64x64xbf16>
}
func.func @wgrad_bf16_transposed(%dy: tensor<96x64xbf16>, %x: tensor<96x64xbf16>) -> tensor<64x64xbf16> {
  %dwt = fusion.matmul %x, %dy {transpose_lhs} : tensor<96x64xbf16>, tensor<96x64xbf16> -> tensor<64x64xbf16>
  return %dwt : tensor<64x64xbf16>
}
func.func @wgrad_bias_bf16(%dy: tensor<40x128xbf16>, %x: tensor<40x64xbf16>, %b: tensor<64xbf16>) -> tensor<128x64xbf16> {
  %dw = fusion.matmul %dy, %x bias(%b : tensor<64xbf16>) {transpose_lhs} : tensor<40x128xbf16>, tensor<40x64xbf16> -> tensor<128x64xbf16>
  return %dw : tensor<128x64xbf16>
}
func.func @wgrad_both_f16(%dy: tensor<48x64xf16>, %x: tensor<32x48xf16>) -> tensor<64x32xf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs, transpose_rhs} : tensor<48x64xf16>, tensor<32x48xf16> -> tensor<64x32xf16>
  return %dw : tensor<64x32xf16>
}
}
