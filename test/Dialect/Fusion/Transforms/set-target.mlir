// fusion-set-target{chip=...} sets the module's fusion.target, replacing one
// it has; an unknown or missing chip fails with the known ones.
// RUN: fusion-opt %s --fusion-set-target=chip=sm_100a | FileCheck %s
// RUN: not fusion-opt %s --fusion-set-target=chip=sm_80 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not fusion-opt %s --fusion-set-target 2>&1 | FileCheck %s --check-prefix=NONE
// CHECK: module attributes {fusion.target = #fusion.target<"sm_100a">}
// CHECK: func.func @f
// BAD: error: fusion-set-target: unknown target chip 'sm_80', expected one of: sm_90a, sm_100a
// NONE: error: fusion-set-target: unknown target chip '', expected one of: sm_90a, sm_100a
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x64xbf16> -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}
}
