// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// RUN: fusion-opt %s --mlir-print-op-generic | fusion-opt | FileCheck %s

// Round trip of fusion.matmul (every transpose combination, mixed element
// types, dynamic dimensions) and fusion.add.

// Plain matmul, bf16.
// CHECK-LABEL: func.func @matmul_bf16
// CHECK-SAME: (%[[A:.*]]: tensor<4096x512xbf16>, %[[B:.*]]: tensor<512x1024xbf16>)
func.func @matmul_bf16(%a: tensor<4096x512xbf16>, %b: tensor<512x1024xbf16>)
    -> tensor<4096x1024xbf16> {
  // CHECK: %[[C:.*]] = fusion.matmul %[[A]], %[[B]] : tensor<4096x512xbf16>, tensor<512x1024xbf16> -> tensor<4096x1024xbf16>
  %c = fusion.matmul %a, %b : tensor<4096x512xbf16>, tensor<512x1024xbf16>
      -> tensor<4096x1024xbf16>
  // CHECK: return %[[C]]
  return %c : tensor<4096x1024xbf16>
}

// transpose_lhs: lhs is [K, M].
// CHECK-LABEL: func.func @matmul_transpose_lhs
// CHECK-SAME: (%[[A:.*]]: tensor<512x64xf16>, %[[B:.*]]: tensor<512x32xf16>)
func.func @matmul_transpose_lhs(%a: tensor<512x64xf16>, %b: tensor<512x32xf16>)
    -> tensor<64x32xf16> {
  // CHECK: fusion.matmul %[[A]], %[[B]] {transpose_lhs}
  // CHECK-SAME: : tensor<512x64xf16>, tensor<512x32xf16> -> tensor<64x32xf16>
  %c = fusion.matmul %a, %b {transpose_lhs} : tensor<512x64xf16>, tensor<512x32xf16>
      -> tensor<64x32xf16>
  return %c : tensor<64x32xf16>
}

// transpose_rhs: rhs is [N, K] (the dgrad GEMM dy @ W^T).
// CHECK-LABEL: func.func @matmul_transpose_rhs
// CHECK-SAME: (%[[DY:.*]]: tensor<4096x1024xbf16>, %[[W:.*]]: tensor<512x1024xbf16>)
func.func @matmul_transpose_rhs(%dy: tensor<4096x1024xbf16>, %w: tensor<512x1024xbf16>)
    -> tensor<4096x512xbf16> {
  // CHECK: fusion.matmul %[[DY]], %[[W]] {transpose_rhs}
  // CHECK-SAME: : tensor<4096x1024xbf16>, tensor<512x1024xbf16> -> tensor<4096x512xbf16>
  %d = fusion.matmul %dy, %w {transpose_rhs} : tensor<4096x1024xbf16>, tensor<512x1024xbf16>
      -> tensor<4096x512xbf16>
  return %d : tensor<4096x512xbf16>
}

// Both operands transposed, f32.
// CHECK-LABEL: func.func @matmul_transpose_both
func.func @matmul_transpose_both(%a: tensor<16x8xf32>, %b: tensor<4x16xf32>)
    -> tensor<8x4xf32> {
  // CHECK: fusion.matmul %{{.*}}, %{{.*}} {transpose_lhs, transpose_rhs}
  // CHECK-SAME: : tensor<16x8xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  %c = fusion.matmul %a, %b {transpose_lhs, transpose_rhs}
      : tensor<16x8xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// Operand and result element types may differ (f16 x bf16 -> f32).
// CHECK-LABEL: func.func @matmul_mixed_types
func.func @matmul_mixed_types(%a: tensor<8x16xf16>, %b: tensor<16x4xbf16>) -> tensor<8x4xf32> {
  // CHECK: fusion.matmul %{{.*}}, %{{.*}} : tensor<8x16xf16>, tensor<16x4xbf16> -> tensor<8x4xf32>
  %c = fusion.matmul %a, %b : tensor<8x16xf16>, tensor<16x4xbf16> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// Dynamic dimensions match any size, including a dynamic contraction
// dimension on one side only.
// CHECK-LABEL: func.func @matmul_dynamic
func.func @matmul_dynamic(%a: tensor<?x?xbf16>, %b: tensor<64x?xbf16>) -> tensor<?x?xbf16> {
  // CHECK: fusion.matmul %{{.*}}, %{{.*}} : tensor<?x?xbf16>, tensor<64x?xbf16> -> tensor<?x?xbf16>
  %c = fusion.matmul %a, %b : tensor<?x?xbf16>, tensor<64x?xbf16> -> tensor<?x?xbf16>
  return %c : tensor<?x?xbf16>
}

// A dynamic result dimension against static operands.
// CHECK-LABEL: func.func @matmul_dynamic_result
func.func @matmul_dynamic_result(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<?x4xf32> {
  // CHECK: fusion.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<?x4xf32>
  %c = fusion.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}

// fusion.add (residual connection), bf16.
// CHECK-LABEL: func.func @add_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<4096x512xbf16>, %[[Y:.*]]: tensor<4096x512xbf16>)
func.func @add_bf16(%x: tensor<4096x512xbf16>, %y: tensor<4096x512xbf16>) -> tensor<4096x512xbf16> {
  // CHECK: %[[H:.*]] = fusion.add %[[X]], %[[Y]] : tensor<4096x512xbf16>
  %h = fusion.add %x, %y : tensor<4096x512xbf16>
  // CHECK: return %[[H]]
  return %h : tensor<4096x512xbf16>
}

// fusion.add on dynamic f16 and on f32 tensors of rank 3.
// CHECK-LABEL: func.func @add_dynamic_f16_f32
func.func @add_dynamic_f16_f32(%x: tensor<?x8xf16>, %y: tensor<2x3x4xf32>)
    -> (tensor<?x8xf16>, tensor<2x3x4xf32>) {
  // CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<?x8xf16>
  // CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<2x3x4xf32>
  %h = fusion.add %x, %x : tensor<?x8xf16>
  %g = fusion.add %y, %y : tensor<2x3x4xf32>
  return %h, %g : tensor<?x8xf16>, tensor<2x3x4xf32>
}

// -----

// nn.Linear: the weight as stored ([out, in]) with its bias; a dynamic token
// count.
// CHECK-LABEL: func.func @linear_bias
func.func @linear_bias(%x: tensor<?x512xbf16>, %w: tensor<1024x512xbf16>, %b: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  // CHECK: fusion.matmul %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<1024xbf16>) {transpose_rhs} : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  %y = fusion.matmul %x, %w bias(%b : tensor<1024xbf16>) {transpose_rhs}
      : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// -----

// Broadcasting add and mul: a row vector, a column, a scalar-like [1, 1]; the
// rhs type is printed only when it differs from lhs's.
// CHECK-LABEL: func.func @broadcasting
func.func @broadcasting(%x: tensor<8x16xbf16>, %b: tensor<16xbf16>, %c: tensor<8x1xf32>, %s: tensor<1x1xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) {
  // CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16xbf16>
  %0 = fusion.add %x, %b : tensor<8x16xbf16>, tensor<16xbf16>
  // CHECK: fusion.mul %{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<8x1xf32>
  %1 = fusion.mul %x, %c : tensor<8x16xbf16>, tensor<8x1xf32>
  // CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<1x1xbf16>
  %2 = fusion.add %x, %s : tensor<8x16xbf16>, tensor<1x1xbf16>
  // CHECK: fusion.mul %{{.*}}, %{{.*}} : tensor<8x16xbf16>{{$}}
  %3 = fusion.mul %x, %x : tensor<8x16xbf16>
  return %0, %1, %2, %3 : tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>
}

// -----

// The element-wise activation, every kind, and fused_matmul's activation
// epilogue and gated product (up).
// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<?x64xbf16>, %y: tensor<8x16xf32>, %wg: tensor<96x64xbf16>, %wu: tensor<96x64xbf16>, %b: tensor<96xbf16>) -> (tensor<?x64xbf16>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<?x96xbf16>, tensor<?x96xbf16>) {
  // CHECK: fusion.activation %{{.*}} {activation = #fusion.activation<silu>} : tensor<?x64xbf16>
  %0 = fusion.activation %x {activation = #fusion.activation<silu>} : tensor<?x64xbf16>
  // CHECK: fusion.activation %{{.*}} {activation = #fusion.activation<gelu_tanh>} : tensor<8x16xf32>
  %1 = fusion.activation %y {activation = #fusion.activation<gelu_tanh>} : tensor<8x16xf32>
  // CHECK: fusion.activation %{{.*}} {activation = #fusion.activation<relu>} : tensor<8x16xf32>
  %2 = fusion.activation %1 {activation = #fusion.activation<relu>} : tensor<8x16xf32>
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} col_bias(%{{.*}} : tensor<96xbf16>) {activation = #fusion.activation<gelu>, transpose_rhs}
  %3 = fusion.fused_matmul %x, %wg col_bias(%b : tensor<96xbf16>) {activation = #fusion.activation<gelu>, transpose_rhs}
      : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} up(%{{.*}} : tensor<96x64xbf16>) {activation = #fusion.activation<silu>, transpose_rhs}
  %4 = fusion.fused_matmul %x, %wg up(%wu : tensor<96x64xbf16>) {activation = #fusion.activation<silu>, transpose_rhs}
      : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  return %0, %1, %2, %3, %4 : tensor<?x64xbf16>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<?x96xbf16>, tensor<?x96xbf16>
}

// A projection with its rotary embedding (rope tables [T, R]), Llama's after
// Lazy Pre-Norm's RMSNorm and GPT-J's pairs.
// CHECK-LABEL: func.func @fused_rope
func.func @fused_rope(%x: tensor<?x64xbf16>, %w: tensor<96x64xbf16>, %c: tensor<?x16xbf16>, %s: tensor<?x16xbf16>, %c1: tensor<1x8xbf16>) -> (tensor<?x96xbf16>, tensor<?x96xbf16>) {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} rope(%{{.*}}, %{{.*}} : tensor<?x16xbf16>, tensor<?x16xbf16>) {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 9.99999997E-7 : f32, rope_head_dim = 32 : i64, transpose_rhs}
  %0 = fusion.fused_matmul %x, %w rope(%c, %s : tensor<?x16xbf16>, tensor<?x16xbf16>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32, rope_head_dim = 32 : i64, transpose_rhs}
      : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} rope(%{{.*}}, %{{.*}} : tensor<1x8xbf16>, tensor<1x8xbf16>) {rope_head_dim = 48 : i64, rope_interleaved, transpose_rhs}
  %1 = fusion.fused_matmul %x, %w rope(%c1, %c1 : tensor<1x8xbf16>, tensor<1x8xbf16>)
      {rope_head_dim = 48 : i64, rope_interleaved, transpose_rhs}
      : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  return %0, %1 : tensor<?x96xbf16>, tensor<?x96xbf16>
}
