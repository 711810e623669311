// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=report=true -verify-diagnostics -o /dev/null

// fusion-plan-kernels folds a fusion.add of a norm gradient's input gradient
// and a tensor of its shape (the gradient of a residual branch) into the
// norm gradient as its residual operand, so that the row kernel of the norm
// gradient adds it: through reshapes of dx (the other operand reshaped back,
// the result reshaped as before), with dx on either side of the add, on
// sm_90a and sm_100a; not where dx has another use, the add broadcasts, the
// add's result type is not dx's, or there is no target.

// RMSNorm's gradient plus a residual gradient of its shape: the add
// disappears into the norm gradient.
// CHECK-LABEL: func.func @rms_direct
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<64x512xbf16>, %[[X:[^:]*]]: tensor<64x512xbf16>, %[[R:[^:]*]]: tensor<64xf32>, %[[W:[^:]*]]: tensor<512xbf16>, %[[RES:[^:]*]]: tensor<64x512xbf16>)
// CHECK-NEXT: %[[DX:.*]], %[[DW:.*]] = fusion.rms_norm_grad %[[DY]], %[[X]], %[[R]] weight(%[[W]] : tensor<512xbf16>) residual(%[[RES]] : tensor<64x512xbf16>)
// CHECK-NOT: fusion.add
// CHECK: return %[[DX]], %[[DW]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_direct(%dy: tensor<64x512xbf16>, %x: tensor<64x512xbf16>, %rstd: tensor<64xf32>,
                      %w: tensor<512xbf16>, %res: tensor<64x512xbf16>) -> (tensor<64x512xbf16>, tensor<512xf32>) {
  // expected-remark @below {{the fusion.add of its input gradient and a tensor of its shape folded in as its residual (one row kernel reads both)}}
  %dx0, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xbf16>)
      : tensor<64x512xbf16>, tensor<64x512xbf16>, tensor<64xf32> -> tensor<64x512xbf16>, tensor<512xf32>
  %dx = fusion.add %dx0, %res : tensor<64x512xbf16>
  return %dx, %dw : tensor<64x512xbf16>, tensor<512xf32>
}
}

// -----

// The attention block's outer residual (LayerNorm over all heads): dx is
// expanded to [B, L, H, D] and added on the right of the add; the output
// gradient is collapsed back to the norm's [B, L, H * D] as the residual, and
// dx + residual expanded as before.
// CHECK-LABEL: func.func @layer_norm_through_expand
// CHECK-SAME: %[[DOUT:[^:]*]]: tensor<2x8x2x64xbf16>)
// CHECK: %[[RESF:.*]] = tensor.collapse_shape %[[DOUT]] {{\[\[}}0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
// CHECK-NEXT: %[[DXF:.*]], %[[PG:.*]]:2 = fusion.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} weight(%{{.*}} : tensor<128xbf16>) residual(%[[RESF]] : tensor<2x8x128xbf16>) {with_bias_grad}
// CHECK-NEXT: %[[DX:.*]] = tensor.expand_shape %[[DXF]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 8, 2, 64]
// CHECK-NOT: fusion.add
// CHECK: return %[[DX]], %[[PG]]#0, %[[PG]]#1
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @layer_norm_through_expand(%dyf: tensor<2x8x128xbf16>, %xf: tensor<2x8x128xbf16>, %m: tensor<2x8xf32>,
                                     %r: tensor<2x8xf32>, %w: tensor<128xbf16>, %dout: tensor<2x8x2x64xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<128xf32>, tensor<128xf32>) {
  // expected-remark @below {{folded in as its residual}}
  %dxf, %dw, %db = fusion.layer_norm_grad %dyf, %xf, %m, %r weight(%w : tensor<128xbf16>) {with_bias_grad}
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32>, tensor<2x8xf32>
      -> tensor<2x8x128xbf16>, tensor<128xf32>, tensor<128xf32>
  %dx0 = tensor.expand_shape %dxf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dx = fusion.add %dout, %dx0 : tensor<2x8x2x64xbf16>
  return %dx, %dw, %db : tensor<2x8x2x64xbf16>, tensor<128xf32>, tensor<128xf32>
}
}

// -----

// A norm over [B, L, H] whose gradient is added on the flattened tokens
// [B * L, H], L dynamic: the residual is expanded back with L read off the
// norm's input, and the result collapsed as before.
// CHECK-LABEL: func.func @rms_through_dynamic_collapse
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<2x?x256xf32>, %[[X:[^:]*]]: tensor<2x?x256xf32>, %{{[^:]*}}: tensor<2x?xf32>, %[[RES:[^:]*]]: tensor<?x256xf32>)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[L:.*]] = tensor.dim %[[X]], %[[C1]] : tensor<2x?x256xf32>
// CHECK: %[[RESE:.*]] = tensor.expand_shape %[[RES]] {{\[\[}}0, 1], [2]] output_shape [2, %[[L]], 256] : tensor<?x256xf32> into tensor<2x?x256xf32>
// CHECK: %[[DX:.*]] = fusion.rms_norm_grad %[[DY]], %[[X]], %{{.*}} residual(%[[RESE]] : tensor<2x?x256xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[DX]] {{\[\[}}0, 1], [2]] : tensor<2x?x256xf32> into tensor<?x256xf32>
// CHECK-NOT: fusion.add
// CHECK: return %[[FLAT]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_through_dynamic_collapse(%dy: tensor<2x?x256xf32>, %x: tensor<2x?x256xf32>, %rstd: tensor<2x?xf32>,
                                        %res: tensor<?x256xf32>) -> tensor<?x256xf32> {
  // expected-remark @below {{folded in as its residual}}
  %dx0 = fusion.rms_norm_grad %dy, %x, %rstd : tensor<2x?x256xf32>, tensor<2x?x256xf32>, tensor<2x?xf32> -> tensor<2x?x256xf32>
  %flat = tensor.collapse_shape %dx0 [[0, 1], [2]] : tensor<2x?x256xf32> into tensor<?x256xf32>
  %dx = fusion.add %flat, %res : tensor<?x256xf32>
  return %dx : tensor<?x256xf32>
}
}

// -----

// The residual gradient is computed after the norm gradient (here by a
// fusion.mul): the norm gradient moves down to the add, after it.
// CHECK-LABEL: func.func @other_computed_later
// CHECK: %[[RES:.*]] = fusion.mul
// CHECK-NEXT: %[[DX:.*]], %[[DW:.*]] = fusion.rms_norm_grad %{{.*}} residual(%[[RES]] : tensor<64x512xbf16>)
// CHECK-NEXT: return %[[DX]], %[[DW]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @other_computed_later(%dy: tensor<64x512xbf16>, %x: tensor<64x512xbf16>, %rstd: tensor<64xf32>,
                                %w: tensor<512xbf16>, %a: tensor<64x512xbf16>, %s: tensor<64x1xf32>)
    -> (tensor<64x512xbf16>, tensor<512xf32>) {
  // expected-remark @below {{folded in as its residual}}
  %dx0, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xbf16>)
      : tensor<64x512xbf16>, tensor<64x512xbf16>, tensor<64xf32> -> tensor<64x512xbf16>, tensor<512xf32>
  %res = fusion.mul %a, %s : tensor<64x512xbf16>, tensor<64x1xf32>
  %dx = fusion.add %dx0, %res : tensor<64x512xbf16>
  return %dx, %dw : tensor<64x512xbf16>, tensor<512xf32>
}
}

// -----

// sm_100a lowers norm gradients through the same row family: the add folds,
// here an f32 residual gradient beside a bf16 dx (dx on the left of the add,
// whose result has dx's type).
// CHECK-LABEL: func.func @sm100a_f32_residual
// CHECK: fusion.layer_norm_grad %{{.*}} residual(%{{.*}} : tensor<16x768xf32>)
// CHECK-NOT: fusion.add
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @sm100a_f32_residual(%dy: tensor<16x768xbf16>, %x: tensor<16x768xbf16>, %m: tensor<16xf32>, %r: tensor<16xf32>,
                               %res: tensor<16x768xf32>) -> tensor<16x768xbf16> {
  // expected-remark @below {{folded in as its residual}}
  %dx0 = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<16x768xbf16>, tensor<16x768xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<16x768xbf16>
  %dx = fusion.add %dx0, %res : tensor<16x768xbf16>, tensor<16x768xf32>
  return %dx : tensor<16x768xbf16>
}
}

// -----

// Not folded: the norm gradient's dx is also returned on its own (the
// attention block's inner residual is such a case: dh feeds the attention
// gradient and the add).
// CHECK-LABEL: func.func @dx_other_use
// CHECK: %[[DX:.*]] = fusion.rms_norm_grad
// CHECK-NOT: residual
// CHECK: %[[SUM:.*]] = fusion.add %[[DX]], %{{.*}}
// CHECK: return %[[SUM]], %[[DX]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dx_other_use(%dy: tensor<64x512xbf16>, %x: tensor<64x512xbf16>, %rstd: tensor<64xf32>,
                        %res: tensor<64x512xbf16>) -> (tensor<64x512xbf16>, tensor<64x512xbf16>) {
  %dx0 = fusion.rms_norm_grad %dy, %x, %rstd : tensor<64x512xbf16>, tensor<64x512xbf16>, tensor<64xf32> -> tensor<64x512xbf16>
  // expected-remark @below {{not folded into the fusion.rms_norm_grad of its operand as its residual: its input gradient has other uses than the add}}
  %dx = fusion.add %dx0, %res : tensor<64x512xbf16>
  return %dx, %dx0 : tensor<64x512xbf16>, tensor<64x512xbf16>
}
}

// -----

// Not folded: the reshape of dx also feeds another op (the attention block's
// inner residual: dh feeds the attention gradient and the add).
// CHECK-LABEL: func.func @view_other_use
// CHECK: %[[DX:.*]] = fusion.rms_norm_grad
// CHECK-NOT: residual
// CHECK: %[[DH:.*]] = tensor.expand_shape %[[DX]]
// CHECK: fusion.add %[[DH]], %{{.*}}
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @view_other_use(%dy: tensor<8x128xf32>, %x: tensor<8x128xf32>, %rstd: tensor<8xf32>,
                          %res: tensor<8x2x64xf32>) -> (tensor<8x2x64xf32>, tensor<8x2x64xf32>) {
  %dxf = fusion.rms_norm_grad %dy, %x, %rstd : tensor<8x128xf32>, tensor<8x128xf32>, tensor<8xf32> -> tensor<8x128xf32>
  %dh = tensor.expand_shape %dxf [[0], [1, 2]] output_shape [8, 2, 64] : tensor<8x128xf32> into tensor<8x2x64xf32>
  %m = fusion.mul %dh, %res : tensor<8x2x64xf32>
  // expected-remark @below {{not folded into the fusion.rms_norm_grad of its operand as its residual: its input gradient (or a reshape of it) has other uses than the add}}
  %dx = fusion.add %dh, %res : tensor<8x2x64xf32>
  return %dx, %m : tensor<8x2x64xf32>, tensor<8x2x64xf32>
}
}

// -----

// Not folded: the add broadcasts a row vector over dx (a bias-like add, not
// a residual gradient).
// CHECK-LABEL: func.func @broadcast_add
// CHECK: %[[DX:.*]] = fusion.layer_norm_grad
// CHECK-NOT: residual
// CHECK: fusion.add %[[DX]], %{{.*}} : tensor<64x512xbf16>, tensor<512xbf16>
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @broadcast_add(%dy: tensor<64x512xbf16>, %x: tensor<64x512xbf16>, %m: tensor<64xf32>, %r: tensor<64xf32>,
                         %b: tensor<512xbf16>) -> tensor<64x512xbf16> {
  %dx0 = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<64x512xbf16>, tensor<64x512xbf16>, tensor<64xf32>, tensor<64xf32> -> tensor<64x512xbf16>
  // expected-remark @below {{not folded into the fusion.layer_norm_grad of its operand as its residual: the add broadcasts (its operands have the shapes [64, 512] and [512])}}
  %dx = fusion.add %dx0, %b : tensor<64x512xbf16>, tensor<512xbf16>
  return %dx : tensor<64x512xbf16>
}
}

// -----

// Not folded: dx on the right of an add whose left operand is f32, so the
// sum is f32, not dx's bf16.
// CHECK-LABEL: func.func @result_type_differs
// CHECK: %[[DX:.*]] = fusion.rms_norm_grad
// CHECK-NOT: residual
// CHECK: fusion.add %{{.*}}, %[[DX]] : tensor<64x512xf32>, tensor<64x512xbf16>
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @result_type_differs(%dy: tensor<64x512xbf16>, %x: tensor<64x512xbf16>, %rstd: tensor<64xf32>,
                               %res: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %dx0 = fusion.rms_norm_grad %dy, %x, %rstd : tensor<64x512xbf16>, tensor<64x512xbf16>, tensor<64xf32> -> tensor<64x512xbf16>
  // expected-remark @below {{not folded into the fusion.rms_norm_grad of its operand as its residual: the add's result type differs from the input gradient's}}
  %dx = fusion.add %res, %dx0 : tensor<64x512xf32>, tensor<64x512xbf16>
  return %dx : tensor<64x512xf32>
}
}

// -----

// Not folded: the residual gradient is computed after the norm gradient from
// its weight gradient, so the norm gradient cannot move down to the add.
// CHECK-LABEL: func.func @param_grad_used_before_add
// CHECK: %[[DX:.*]], %[[DW:.*]] = fusion.rms_norm_grad
// CHECK-NOT: residual
// CHECK: %[[RES:.*]] = fusion.mul %{{.*}}, %[[DW]]
// CHECK: fusion.add %[[DX]], %[[RES]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @param_grad_used_before_add(%dy: tensor<64x512xf32>, %x: tensor<64x512xf32>, %rstd: tensor<64xf32>,
                                      %w: tensor<512xf32>, %a: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %dx0, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xf32>)
      : tensor<64x512xf32>, tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xf32>, tensor<512xf32>
  %res = fusion.mul %a, %dw : tensor<64x512xf32>, tensor<512xf32>
  // expected-remark @below {{not folded into the fusion.rms_norm_grad of its operand as its residual: the add's other operand is computed after it, and its parameter gradients are used before the add}}
  %dx = fusion.add %dx0, %res : tensor<64x512xf32>
  return %dx : tensor<64x512xf32>
}
}

// -----

// Not folded: the norm gradient already adds a residual (a second residual
// gradient stays a separate add).
// CHECK-LABEL: func.func @already_has_residual
// CHECK: %[[DX:.*]] = fusion.rms_norm_grad %{{.*}} residual(
// CHECK: fusion.add %[[DX]], %{{.*}}
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @already_has_residual(%dy: tensor<64x512xf32>, %x: tensor<64x512xf32>, %rstd: tensor<64xf32>,
                                %r1: tensor<64x512xf32>, %r2: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %dx0 = fusion.rms_norm_grad %dy, %x, %rstd residual(%r1 : tensor<64x512xf32>)
      : tensor<64x512xf32>, tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xf32>
  // expected-remark @below {{not folded into the fusion.rms_norm_grad of its operand as its residual: it already adds a residual}}
  %dx = fusion.add %dx0, %r2 : tensor<64x512xf32>
  return %dx : tensor<64x512xf32>
}
}

// -----

// Without a target nothing is folded (the CPU runs the reference lowering,
// and nothing is planned): the IR is unchanged.
// CHECK-LABEL: func.func @no_target
// CHECK: %[[DX:.*]] = fusion.rms_norm_grad
// CHECK-NOT: residual
// CHECK: fusion.add %[[DX]], %{{.*}}
func.func @no_target(%dy: tensor<64x512xf32>, %x: tensor<64x512xf32>, %rstd: tensor<64xf32>,
                     %res: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %dx0 = fusion.rms_norm_grad %dy, %x, %rstd : tensor<64x512xf32>, tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xf32>
  %dx = fusion.add %dx0, %res : tensor<64x512xf32>
  return %dx : tensor<64x512xf32>
}
