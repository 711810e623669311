// fusion-plan-kernels' fold of a gdpa's output plus x into the gdpa's
// residual keeps the program's values: each function runs on the CPU on the
// same random inputs before and after the pass (attention + x rounded once
// instead of twice: within bf16's rounding).
// RUN: fusion-runner %s -e block --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e other --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e jagged_residual --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s
// The rewrite happened:
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the residual left out differs.
// RUN: not fusion-runner %s -e block --compare=block_without --atol=2e-2 --rtol=2e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-LABEL: func.func @block(
// IR: fusion.gdpa {{.*}} residual(
// IR-NOT: fusion.add
// IR-LABEL: func.func @block_without(
// IR-LABEL: func.func @other(
// IR: fusion.gdpa {{.*}} residual(
// IR-NOT: fusion.add
// IR-LABEL: func.func @jagged_residual(
// IR: fusion.gdpa {{.*}} residual(
// IR-NOT: fusion.add

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// The Kunlun block's h = gdpa(ln, k, v) + ln.
func.func @block(%ln: tensor<2x8x2x64xbf16>, %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>) -> tensor<2x8x2x64xbf16> {
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16> -> tensor<2x8x2x64xbf16>
  %h = fusion.add %a, %ln : tensor<2x8x2x64xbf16>
  return %h : tensor<2x8x2x64xbf16>
}
func.func @block_without(%ln: tensor<2x8x2x64xbf16>, %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>) -> tensor<2x8x2x64xbf16> {
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16> -> tensor<2x8x2x64xbf16>
  return %a : tensor<2x8x2x64xbf16>
}
// Another tensor (Dv != D), the gdpa's output the add's rhs.
func.func @other(%q: tensor<1x9x2x64xbf16>, %k: tensor<1x16x2x64xbf16>, %v: tensor<1x16x2x128xbf16>, %r: tensor<1x9x2x128xbf16>) -> tensor<1x9x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<1x9x2x64xbf16>, tensor<1x16x2x64xbf16>, tensor<1x16x2x128xbf16> -> tensor<1x9x2x128xbf16>
  %h = fusion.add %r, %o : tensor<1x9x2x128xbf16>
  return %h : tensor<1x9x2x128xbf16>
}
// Jagged q with an empty sequence and tokens past offsets[B] (their output
// is the residual), a residual of its own.
func.func @jagged_residual(%q: tensor<20x2x64xbf16>, %k: tensor<4x16x2x64xbf16>, %v: tensor<4x16x2x64xbf16>, %r: tensor<20x2x64xbf16>) -> tensor<20x2x64xbf16> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<20x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16> -> tensor<20x2x64xbf16>
  %sum = fusion.add %o, %r : tensor<20x2x64xbf16>
  return %sum : tensor<20x2x64xbf16>
}
}
