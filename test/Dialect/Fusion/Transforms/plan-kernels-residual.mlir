// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s

// fusion-plan-kernels folds a fusion.add of a gdpa's output and a tensor of
// its type into the gdpa's residual (foldAttentionResiduals), where the
// target's gdpa kernel takes the op; otherwise the IR is unchanged.

// The Kunlun block's inner residual: gdpa(ln, k, v) + ln.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[LN:[^:]*]]: tensor<2x8x2x128xbf16>, %[[K:[^:]*]]: tensor<2x128x2x128xbf16>, %[[V:[^:]*]]: tensor<2x128x2x128xbf16>)
// CHECK: %[[H:.*]] = fusion.gdpa %[[LN]], %[[K]], %[[V]] residual(%[[LN]] : tensor<2x8x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.000000e+00 : f32}
// CHECK-NOT: fusion.add
// CHECK: return %[[H]]
func.func @block(%ln: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %v: tensor<2x128x2x128xbf16>) -> tensor<2x8x2x128xbf16> {
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %h = fusion.add %a, %ln : tensor<2x8x2x128xbf16>
  return %h : tensor<2x8x2x128xbf16>
}
}

// -----

// The other operand order, a residual of its own (dynamic sizes, jagged q,
// Dv != D).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @jagged_other_order
// CHECK-SAME: %[[OFF:[^:]*]]: tensor<?xi32>, %[[R:[^:]*]]: tensor<?x2x128xbf16>)
// CHECK: %[[O:.*]] = fusion.gdpa %{{.*}} offsets(%[[OFF]] : tensor<?xi32>) residual(%[[R]] : tensor<?x2x128xbf16>)
// CHECK-NOT: fusion.add
// CHECK: return %[[O]]
func.func @jagged_other_order(%q: tensor<?x2x64xbf16>, %k: tensor<?x100x2x64xbf16>, %v: tensor<?x100x2x128xbf16>,
                              %off: tensor<?xi32>, %r: tensor<?x2x128xbf16>) -> tensor<?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi32>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x128xbf16> -> tensor<?x2x128xbf16>
  %sum = fusion.add %r, %o : tensor<?x2x128xbf16>
  return %sum : tensor<?x2x128xbf16>
}
}

// -----

// sm_100a's gdpa kernel takes the residual too.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @sm100
// CHECK: fusion.gdpa {{.*}} residual(
// CHECK-NOT: fusion.add
func.func @sm100(%q: tensor<2x8x2x128xf16>, %k: tensor<2x128x2x128xf16>) -> tensor<2x8x2x128xf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xf16>, tensor<2x128x2x128xf16>, tensor<2x128x2x128xf16> -> tensor<2x8x2x128xf16>
  %sum = fusion.add %o, %q : tensor<2x8x2x128xf16>
  return %sum : tensor<2x8x2x128xf16>
}
}

// -----

// Not folded: the gdpa's output has another use (it is returned too).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @other_use
// CHECK: %[[O:.*]] = fusion.gdpa
// CHECK-NOT: residual
// CHECK: %[[SUM:.*]] = fusion.add %[[O]], %{{.*}} : tensor<2x8x2x128xbf16>
// CHECK: return %[[SUM]], %[[O]]
func.func @other_use(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>) -> (tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>) {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %sum = fusion.add %o, %q : tensor<2x8x2x128xbf16>
  return %sum, %o : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: the gdpa's output added to itself (two uses).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @doubled
// CHECK: %[[O:.*]] = fusion.gdpa
// CHECK-NOT: residual
// CHECK: fusion.add %[[O]], %[[O]] : tensor<2x8x2x128xbf16>
func.func @doubled(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>) -> tensor<2x8x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %sum = fusion.add %o, %o : tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: the add broadcasts a per-column bias over the output (not the
// output's shape).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[O:.*]] = fusion.gdpa
// CHECK-NOT: residual
// CHECK: fusion.add %[[O]], %{{.*}} : tensor<2x8x2x128xbf16>, tensor<128xbf16>
func.func @broadcast(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %b: tensor<128xbf16>) -> tensor<2x8x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %sum = fusion.add %o, %b : tensor<2x8x2x128xbf16>, tensor<128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: a broadcast of the same rank (one value per token and head,
// [.., 1]).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @broadcast_same_rank
// CHECK-NOT: residual
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<2x8x2x128xbf16>, tensor<2x8x2x1xbf16>
func.func @broadcast_same_rank(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %b: tensor<2x8x2x1xbf16>) -> tensor<2x8x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %sum = fusion.add %o, %b : tensor<2x8x2x128xbf16>, tensor<2x8x2x1xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: an f32 lhs (the sum is f32, not the output's type).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @other_type
// CHECK-NOT: residual
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<2x8x2x128xf32>, tensor<2x8x2x128xbf16>
func.func @other_type(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %x: tensor<2x8x2x128xf32>) -> tensor<2x8x2x128xf32> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %sum = fusion.add %x, %o : tensor<2x8x2x128xf32>, tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xf32>
}
}

// -----

// Not folded: the other operand is computed after the gdpa, so the gdpa
// could not read it.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @defined_after
// CHECK: %[[O:.*]] = fusion.gdpa
// CHECK-NOT: residual
// CHECK: %[[X:.*]] = fusion.add %{{.*}}, %{{.*}} : tensor<2x8x2x128xbf16>
// CHECK: fusion.add %[[X]], %[[O]] : tensor<2x8x2x128xbf16>
func.func @defined_after(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>) -> tensor<2x8x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %x = fusion.add %q, %q : tensor<2x8x2x128xbf16>
  %sum = fusion.add %x, %o : tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: a gdpa that already adds a residual.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @already
// CHECK: %[[O:.*]] = fusion.gdpa {{.*}} residual(
// CHECK: fusion.add %[[O]], %{{.*}} : tensor<2x8x2x128xbf16>
func.func @already(%q: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %r: tensor<2x8x2x128xbf16>) -> tensor<2x8x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %k residual(%r : tensor<2x8x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16> -> tensor<2x8x2x128xbf16>
  %sum = fusion.add %o, %q : tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: no sm_90a kernel takes this gdpa (D = 32; the conversion
// refuses it with its reason), so the add keeps its own.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @no_kernel
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @no_kernel(%q: tensor<2x8x2x32xbf16>, %k: tensor<2x64x2x32xbf16>) -> tensor<2x8x2x32xbf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x32xbf16>, tensor<2x64x2x32xbf16>, tensor<2x64x2x32xbf16> -> tensor<2x8x2x32xbf16>
  %sum = fusion.add %o, %q : tensor<2x8x2x32xbf16>
  return %sum : tensor<2x8x2x32xbf16>
}
}

// -----

// Not folded: an f32 gdpa (the kernel takes bf16 and f16).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @f32
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @f32(%q: tensor<2x8x2x64xf32>, %k: tensor<2x64x2x64xf32>) -> tensor<2x8x2x64xf32> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x64xf32>, tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32> -> tensor<2x8x2x64xf32>
  %sum = fusion.add %o, %q : tensor<2x8x2x64xf32>
  return %sum : tensor<2x8x2x64xf32>
}
}

// -----

// Not folded: a module without a target (nothing says which kernel runs it).
// CHECK-LABEL: func.func @no_target
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @no_target(%q: tensor<2x8x2x64xbf16>, %k: tensor<2x64x2x64xbf16>) -> tensor<2x8x2x64xbf16> {
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16> -> tensor<2x8x2x64xbf16>
  %sum = fusion.add %o, %q : tensor<2x8x2x64xbf16>
  return %sum : tensor<2x8x2x64xbf16>
}
