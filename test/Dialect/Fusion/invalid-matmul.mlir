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

// add's operands and result have one type (written in generic form, since the
// custom syntax has a single type).
func.func @add_type_mismatch(%x: tensor<4x8xf32>, %y: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @below {{requires the same type for all operands and results}}
  %z = "fusion.add"(%x, %y) : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}
