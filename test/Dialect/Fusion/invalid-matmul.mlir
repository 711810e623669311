// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of fusion.matmul and fusion.add: one case per diagnostic.

// matmul rejects integer data (ODS element-type constraint).
func.func @matmul_i32(%a: tensor<4x8xi32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xi32>'}}
  %c = fusion.matmul %a, %b : tensor<4x8xi32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %c : tensor<4x2xf32>
}

// -----

// matmul's lhs is a matrix.
func.func @matmul_lhs_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  // expected-error @below {{expected lhs of rank 2, but got rank 3}}
  %c = fusion.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %c : tensor<4x2xf32>
}

// -----

// matmul's rhs is a matrix.
func.func @matmul_rhs_rank(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x2xf32> {
  // expected-error @below {{expected rhs of rank 2, but got rank 1}}
  %c = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x2xf32>
  return %c : tensor<4x2xf32>
}

// -----

// matmul's result is a matrix.
func.func @matmul_result_rank(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<8xf32> {
  // expected-error @below {{expected result of rank 2, but got rank 1}}
  %c = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// matmul's contraction dimensions must match; with transpose_rhs, K is the
// rhs's second dimension.
func.func @matmul_contraction(%a: tensor<4x8xbf16>, %b: tensor<8x2xbf16>) -> tensor<4x8xbf16> {
  // expected-error @below {{expected the contraction dimensions of lhs and rhs to match, but got K = 8 (lhs) and K = 2 (rhs)}}
  %c = fusion.matmul %a, %b {transpose_rhs} : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x8xbf16>
  return %c : tensor<4x8xbf16>
}

// -----

// matmul's result is [M, N]; with transpose_lhs, M is the lhs's second dimension.
func.func @matmul_result_shape(%a: tensor<8x4xf16>, %b: tensor<8x2xf16>) -> tensor<8x2xf16> {
  // expected-error @below {{expected result of shape [4, 2] ([M, N]), but got [8, 2]}}
  %c = fusion.matmul %a, %b {transpose_lhs} : tensor<8x4xf16>, tensor<8x2xf16> -> tensor<8x2xf16>
  return %c : tensor<8x2xf16>
}

// -----

// add rejects f64 data (ODS element-type constraint).
func.func @add_f64(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xf64>'}}
  %y = fusion.add %x, %x : tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}

// -----

// add's result has lhs's type (written in generic form: the custom syntax
// takes the result type from lhs).
func.func @add_result_type(%x: tensor<4x8xf32>, %y: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // expected-error @below {{expected result of lhs's type 'tensor<4x8xf32>', but got 'tensor<4x8xbf16>'}}
  %z = "fusion.add"(%x, %y) : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %z : tensor<4x8xbf16>
}

// -----

// add's rhs has no more dimensions than lhs.
func.func @add_rhs_rank(%x: tensor<8xf32>, %y: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @below {{expected rhs of rank <= 1 (it broadcasts against lhs [8]), but got rank 2 [4, 8]}}
  %z = fusion.add %x, %y : tensor<8xf32>, tensor<4x8xf32>
  return %z : tensor<8xf32>
}

// -----

// add's rhs broadcasts NumPy-style: each dimension equal to lhs's or 1.
func.func @add_broadcast(%x: tensor<4x8xbf16>, %b: tensor<4xbf16>) -> tensor<4x8xbf16> {
  // expected-error @below {{expected rhs [4] to broadcast against lhs [4, 8] (aligned at the innermost dimension, each rhs dimension equal to lhs's or 1), but dimension 0 of rhs is 4 where lhs has 8}}
  %z = fusion.add %x, %b : tensor<4x8xbf16>, tensor<4xbf16>
  return %z : tensor<4x8xbf16>
}

// -----

// mul follows add's rules (one case: the broadcast).
func.func @mul_broadcast(%x: tensor<4x8xbf16>, %s: tensor<8x1xf32>) -> tensor<4x8xbf16> {
  // expected-error @below {{expected rhs [8, 1] to broadcast against lhs [4, 8] (aligned at the innermost dimension, each rhs dimension equal to lhs's or 1), but dimension 0 of rhs is 8 where lhs has 4}}
  %z = fusion.mul %x, %s : tensor<4x8xbf16>, tensor<8x1xf32>
  return %z : tensor<4x8xbf16>
}

// -----

// matmul's bias is one value per output column.
func.func @matmul_bias_shape(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x16xbf16> {
  // expected-error @below {{expected bias of shape [16] ([N]), but got [8]}}
  %y = fusion.matmul %x, %w bias(%b : tensor<8xbf16>) {transpose_rhs} : tensor<4x8xbf16>, tensor<16x8xbf16> -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

// An activation keeps its input's type.
func.func @activation_type(%x: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @below {{requires the same type for all operands and results}}
  %y = "fusion.activation"(%x) {activation = #fusion.activation<silu>} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
