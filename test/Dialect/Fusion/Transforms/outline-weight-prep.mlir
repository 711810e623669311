// RUN: fusion-opt %s -split-input-file -fusion-outline-weight-prep=report=true -verify-diagnostics | FileCheck %s
// What fusion-outline-weight-prep moves out of a function, what it leaves,
// and why (its remarks). The CPU runs before and after are in
// test/Execution/Transforms/outline-weight-prep.mlir.

// CHECK-LABEL: func.func @fold_prepare(
// CHECK-SAME: %[[G:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<16x8xf32>) -> tensor<16x8xf32>
// CHECK-NEXT: %[[F:.*]] = fusion.mul %[[W]], %[[G]]
// CHECK-NEXT: return %[[F]]
// CHECK-LABEL: func.func @fold(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %{{.*}}: tensor<8xf32> {fusion.weight}, %{{.*}}: tensor<16x8xf32> {fusion.weight}, %[[P:[^:]*]]: tensor<16x8xf32> {fusion.prepared = 0 : i64})
// CHECK-SAME: attributes {fusion.prepare = @fold_prepare}
// CHECK-NEXT: fusion.fused_matmul %[[X]], %[[P]]
// expected-remark @below {{func.func weight preparation outlined into @fold_prepare: 1 value(s) computed from the weights alone (by its caller when the weights change, not per call), passed to this function after its arguments}}
func.func @fold(%x: tensor<4x8xf32>, %g: tensor<8xf32> {fusion.weight}, %w: tensor<16x8xf32> {fusion.weight}) -> tensor<4x16xf32> {
  %wg = fusion.mul %w, %g : tensor<16x8xf32>, tensor<8xf32>
  %y = fusion.fused_matmul %x, %wg {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32, transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A view of a weight alone costs nothing: it stays, and nothing is outlined.
// CHECK-LABEL: func.func @view_only(
// CHECK-NOT: fusion.prepare
// CHECK: tensor.expand_shape
func.func @view_only(%x: tensor<4x8xf32>, %g: tensor<8xf32> {fusion.weight}) -> tensor<4x8xf32> {
  %row = tensor.expand_shape %g [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %y = fusion.mul %x, %row : tensor<4x8xf32>, tensor<1x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Whatever reads an activation stays; so does a function without weights.
// CHECK-LABEL: func.func @no_weights(
// CHECK-NOT: fusion.prepare
func.func @no_weights(%x: tensor<16x8xf32>, %g: tensor<8xf32>) -> tensor<16x8xf32> {
  %y = fusion.mul %x, %g : tensor<16x8xf32>, tensor<8xf32>
  return %y : tensor<16x8xf32>
}

// -----

// A weight-only value that is also returned is left where it is.
// expected-remark @below {{func.func weight preparation not outlined: a value computed from the weights alone is returned}}
func.func @returned(%x: tensor<4x8xf32>, %g: tensor<8xf32> {fusion.weight}, %w: tensor<16x8xf32> {fusion.weight}) -> (tensor<4x16xf32>, tensor<16x8xf32>) {
  %wg = fusion.mul %w, %g : tensor<16x8xf32>, tensor<8xf32>
  %y = fusion.matmul %x, %wg {transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %y, %wg : tensor<4x16xf32>, tensor<16x8xf32>
}

// -----

// The name it would take is taken.
func.func @taken_prepare() {
  return
}
// expected-remark @below {{func.func weight preparation not outlined: @taken_prepare already exists}}
func.func @taken(%x: tensor<4x8xf32>, %g: tensor<8xf32> {fusion.weight}, %w: tensor<16x8xf32> {fusion.weight}) -> tensor<4x16xf32> {
  %wg = fusion.mul %w, %g : tensor<16x8xf32>, tensor<8xf32>
  %y = fusion.matmul %x, %wg {transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
