// fusion-plan-kernels' fold of dq + x into the attention backward's residual
// keeps the program's values: each function runs on the CPU on the same
// random inputs before and after the pass (dq + x rounded once instead of
// twice: within bf16's rounding).
// RUN: fusion-runner %s -e block_dh --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e jagged_residual --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s
// The rewrite happened:
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the residual left out differs.
// RUN: not fusion-runner %s -e block_dh --compare=block_dh_without --atol=2e-2 --rtol=2e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-LABEL: func.func @block_dh(
// IR: fusion.gdpa_grad {{.*}} residual(
// IR-NOT: fusion.add
// IR-LABEL: func.func @block_dh_without(
// IR-LABEL: func.func @jagged_residual(
// IR: fusion.gdpa_grad {{.*}} residual(
// IR-NOT: fusion.add

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// The Kunlun block's dln_q = dh + dq1, dh the gdpa_grad's grad.
func.func @block_dh(%dh: tensor<2x8x2x64xbf16>, %ln: tensor<2x8x2x64xbf16>, %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>) {
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  %dlnq = fusion.add %dh, %dq1 : tensor<2x8x2x64xbf16>
  return %dlnq, %dk, %dv : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
}
func.func @block_dh_without(%dh: tensor<2x8x2x64xbf16>, %ln: tensor<2x8x2x64xbf16>, %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>) {
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  return %dq1, %dk, %dv : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
}
// Jagged q with an empty sequence and tokens past offsets[B] (their dq is
// the residual), a residual of its own, dq the add's lhs.
func.func @jagged_residual(%do: tensor<20x2x64xbf16>, %q: tensor<20x2x64xbf16>, %k: tensor<4x16x2x64xbf16>, %v: tensor<4x16x2x64xbf16>, %r: tensor<20x2x64xbf16>)
    -> (tensor<20x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<20x2x64xbf16>, tensor<20x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16>
      -> tensor<20x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16>
  %sum = fusion.add %dq1, %r : tensor<20x2x64xbf16>
  return %sum, %dk, %dv : tensor<20x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16>
}
}
