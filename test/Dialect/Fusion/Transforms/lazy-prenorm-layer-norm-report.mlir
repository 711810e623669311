// RUN: fusion-opt %s -split-input-file -fusion-lazy-prenorm='layer-norm=true report=true' -verify-diagnostics -o /dev/null

// Test that, with LayerNorm deferral on, the report says how the LayerNorm
// bias became a column bias (beta B) and that the linear's bias joined it.
func.func @runtime(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<4xf32>, %beta: tensor<16xf32>) -> tensor<8x4xf32> {
  // expected-remark @below {{fusion.layer_norm fused as a Lazy Pre-Norm prologue into 1 fusion.fused_matmul op(s); bias applied as the column bias beta B, a 1-row fusion.matmul per call; the bias of 1 matmul(s) kept in the column bias}}
  %n, %m, %r = fusion.layer_norm %x bias(%beta : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %w bias(%b : tensor<4xf32>) {transpose_rhs} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// Constant beta and B: beta B is computed at compile time.
func.func @constant(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %beta = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %g = arith.constant dense<[2.0, -0.5]> : tensor<2xf32>
  // expected-remark @below {{fusion.layer_norm fused as a Lazy Pre-Norm prologue into 1 fusion.fused_matmul op(s); weight folded into B at compile time; bias applied as the column bias beta B, computed at compile time}}
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<2xf32>) bias(%beta : tensor<2xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<3x2xf32> -> tensor<3x2xf32>, tensor<3xf32>, tensor<3xf32>
  %c = fusion.matmul %n, %b : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}

// -----

// A LayerNorm prologue stays off GEMMs with a norm epilogue (its kernel's
// accumulator limit is narrower than their tiles).
func.func @layer_norm_fused_epilogue_user(%x: tensor<8x16xf32>, %w: tensor<64x16xf32>) -> tensor<8x64xf32> {
  // expected-remark @below {{fusion.layer_norm not fused as a Lazy Pre-Norm prologue: 'fusion.fused_matmul' uses the normalized tensor other than as the left operand of a fusion.matmul (or, for RMSNorm, of a fusion.fused_matmul with a norm epilogue and no prologue), so the norm would stay}}
  %n, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>
  %q = fusion.fused_matmul %n, %w
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 32 : i64, transpose_rhs}
      : tensor<8x16xf32>, tensor<64x16xf32> -> tensor<8x64xf32>
  return %q : tensor<8x64xf32>
}
