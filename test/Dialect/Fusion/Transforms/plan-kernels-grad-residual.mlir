// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s

// fusion-plan-kernels folds a fusion.add of a gdpa_grad's query gradient
// and a tensor of its type into the gdpa_grad's residual
// (foldAttentionResiduals), where the target's attention backward kernel
// takes the op; otherwise the IR is unchanged.

// The Kunlun block's backward: dh + dq1, dh the gdpa_grad's own grad.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @block_dh
// CHECK-SAME: (%[[DH:[^:]*]]: tensor<2x8x2x128xbf16>, %[[LN:[^:]*]]: tensor<2x8x2x128xbf16>, %[[K:[^:]*]]: tensor<2x128x2x128xbf16>
// CHECK: %[[DQ:.*]], %{{.*}}, %{{.*}} = fusion.gdpa_grad %[[DH]], %[[LN]], %[[K]], %[[K]] residual(%[[DH]] : tensor<2x8x2x128xbf16>)
// CHECK-NOT: fusion.add
// CHECK: return %[[DQ]]
func.func @block_dh(%dh: tensor<2x8x2x128xbf16>, %ln: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>)
    -> (tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>) {
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
      -> tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
  %dlnq = fusion.add %dh, %dq1 : tensor<2x8x2x128xbf16>
  return %dlnq, %dk, %dv : tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
}
}

// -----

// The other operand order, a residual of its own (dynamic sizes, jagged q).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @jagged_other_order
// CHECK-SAME: %[[OFF:[^:]*]]: tensor<?xi32>, %[[R:[^:]*]]: tensor<?x2x64xbf16>)
// CHECK: %[[DQ:.*]], %{{.*}}, %{{.*}} = fusion.gdpa_grad %{{.*}} offsets(%[[OFF]] : tensor<?xi32>) residual(%[[R]] : tensor<?x2x64xbf16>)
// CHECK-NOT: fusion.add
// CHECK: return %[[DQ]]
func.func @jagged_other_order(%do: tensor<?x2x64xbf16>, %q: tensor<?x2x64xbf16>, %k: tensor<?x100x2x64xbf16>,
                              %off: tensor<?xi32>, %r: tensor<?x2x64xbf16>) -> tensor<?x2x64xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %k offsets(%off : tensor<?xi32>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>
  %sum = fusion.add %dq1, %r : tensor<?x2x64xbf16>
  return %sum : tensor<?x2x64xbf16>
}
}

// -----

// sm_100a's backward kernel takes the residual too.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @sm100
// CHECK: fusion.gdpa_grad {{.*}} residual(
// CHECK-NOT: fusion.add
func.func @sm100(%do: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>) -> tensor<2x8x2x128xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
      -> tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
  %sum = fusion.add %do, %dq1 : tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: the query gradient has another use (it is returned too).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @other_use
// CHECK: %[[DQ:.*]], %{{.*}}, %{{.*}} = fusion.gdpa_grad
// CHECK-NOT: residual
// CHECK: %[[SUM:.*]] = fusion.add %{{.*}}, %[[DQ]] : tensor<2x8x2x128xbf16>
// CHECK: return %[[SUM]], %[[DQ]]
func.func @other_use(%do: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>) -> (tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>) {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
      -> tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
  %sum = fusion.add %do, %dq1 : tensor<2x8x2x128xbf16>
  return %sum, %dq1 : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: the add broadcasts a per-column bias over dq (not dq's shape).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[DQ:.*]], %{{.*}}, %{{.*}} = fusion.gdpa_grad
// CHECK-NOT: residual
// CHECK: fusion.add %[[DQ]], %{{.*}} : tensor<2x8x2x128xbf16>, tensor<128xbf16>
func.func @broadcast(%do: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %b: tensor<128xbf16>) -> tensor<2x8x2x128xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
      -> tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
  %sum = fusion.add %dq1, %b : tensor<2x8x2x128xbf16>, tensor<128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: an f32 lhs (the sum is f32, not dq's type).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @other_type
// CHECK-NOT: residual
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<2x8x2x128xf32>, tensor<2x8x2x128xbf16>
func.func @other_type(%do: tensor<2x8x2x128xbf16>, %k: tensor<2x128x2x128xbf16>, %x: tensor<2x8x2x128xf32>) -> tensor<2x8x2x128xf32> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
      -> tensor<2x8x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
  %sum = fusion.add %x, %dq1 : tensor<2x8x2x128xf32>, tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xf32>
}
}

// -----

// Not folded: the other operand is computed after the gdpa_grad (from one
// of its results), so the gdpa_grad could not read it.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @defined_after
// CHECK: %[[DQ:.*]], %[[DK:.*]], %{{.*}} = fusion.gdpa_grad
// CHECK-NOT: residual
// CHECK: %[[X:.*]] = fusion.add %{{.*}}, %{{.*}} : tensor<2x8x2x128xbf16>
// CHECK: fusion.add %[[X]], %[[DQ]] : tensor<2x8x2x128xbf16>
func.func @defined_after(%do: tensor<2x8x2x128xbf16>, %k: tensor<2x8x2x128xbf16>) -> tensor<2x8x2x128xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>
      -> tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>, tensor<2x8x2x128xbf16>
  %x = fusion.add %dk, %do : tensor<2x8x2x128xbf16>
  %sum = fusion.add %x, %dq1 : tensor<2x8x2x128xbf16>
  return %sum : tensor<2x8x2x128xbf16>
}
}

// -----

// Not folded: no sm_90a kernel takes this gdpa_grad (L_kv = 300; the
// conversion refuses it with its reason), so the add keeps its own.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @no_kernel
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @no_kernel(%do: tensor<2x8x2x64xbf16>, %k: tensor<2x300x2x64xbf16>) -> tensor<2x8x2x64xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x300x2x64xbf16>, tensor<2x300x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x300x2x64xbf16>, tensor<2x300x2x64xbf16>
  %sum = fusion.add %do, %dq1 : tensor<2x8x2x64xbf16>
  return %sum : tensor<2x8x2x64xbf16>
}
}

// -----

// Not folded: a module without a target (nothing says which kernel runs it).
// CHECK-LABEL: func.func @no_target
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @no_target(%do: tensor<2x8x2x64xbf16>, %k: tensor<2x64x2x64xbf16>) -> tensor<2x8x2x64xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
  %sum = fusion.add %do, %dq1 : tensor<2x8x2x64xbf16>
  return %sum : tensor<2x8x2x64xbf16>
}

// -----

// Not folded: the gdpa_grad already adds its output gradient to dq
// (grad_residual; an operand beside it would be invalid).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @grad_residual
// CHECK: fusion.gdpa_grad
// CHECK-NOT: residual(
// CHECK: fusion.add
func.func @grad_residual(%do: tensor<2x8x2x64xbf16>, %k: tensor<2x64x2x64xbf16>, %x: tensor<2x8x2x64xbf16>) -> tensor<2x8x2x64xbf16> {
  %dq1, %dk, %dv = fusion.gdpa_grad %do, %do, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32, grad_residual}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
  %sum = fusion.add %x, %dq1 : tensor<2x8x2x64xbf16>
  return %sum : tensor<2x8x2x64xbf16>
}
}
