// RUN: fusion-opt %s -split-input-file -fusion-lazy-prenorm=report=true -verify-diagnostics -o /dev/null

// The report names what the norm was fused into.
func.func @fused(%x: tensor<8x16xf32>, %b1: tensor<16x4xf32>, %b2: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  // expected-remark @below {{fusion.rms_norm fused as a Lazy Pre-Norm prologue into 2 fusion.fused_matmul op(s)}}
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  %c1 = fusion.matmul %n, %b1 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %c2 = fusion.matmul %n, %b2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c1, %c2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// The report says how the weight was folded.
func.func @weight(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>, %g: tensor<16xf32>) -> tensor<8x4xf32> {
  // expected-remark @below {{fusion.rms_norm fused as a Lazy Pre-Norm prologue into 1 fusion.fused_matmul op(s); weight folded into B by a fusion.mul (a device step per call)}}
  %n = fusion.rms_norm %x weight(%g : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// A non-matmul user keeps the norm.
func.func @other_user(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  // expected-remark @below {{fusion.rms_norm not fused as a Lazy Pre-Norm prologue: 'func.return' uses the normalized tensor other than as the left operand of a fusion.matmul (or, for RMSNorm, of a fusion.fused_matmul with a norm epilogue and no prologue), so the norm would stay}}
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c, %n : tensor<8x4xf32>, tensor<8x16xf32>
}

// -----

// Used statistics keep the norm.
func.func @stats_used(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8xf32>) {
  // expected-remark @below {{fusion.rms_norm not fused as a Lazy Pre-Norm prologue: its statistics are used; the fused GEMM does not produce them}}
  %n, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c, %r : tensor<8x4xf32>, tensor<8xf32>
}

// -----

// A 3-D input is not a GEMM operand.
func.func @rank3(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-remark @below {{fusion.rms_norm not fused as a Lazy Pre-Norm prologue: its input has rank 3; the prologue needs a 2-D [M, K] GEMM operand}}
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %n : tensor<2x8x16xf32>
}

// -----

// LayerNorm deferral is opt-in.
func.func @layer_norm_off(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-remark @below {{fusion.layer_norm not fused as a Lazy Pre-Norm prologue: LayerNorm deferral is off (option layer-norm)}}
  %n, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// An unused norm is not fused (nothing to fuse into).
func.func @dead(%x: tensor<8x16xf32>) {
  // expected-remark @below {{fusion.rms_norm not fused as a Lazy Pre-Norm prologue: its result is unused}}
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// The report says that the linears' biases stayed in the column bias.
func.func @linear_biases(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<4xf32>, %w2: tensor<4x16xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  // expected-remark @below {{fusion.rms_norm fused as a Lazy Pre-Norm prologue into 2 fusion.fused_matmul op(s); the bias of 1 matmul(s) kept in the column bias}}
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = fusion.matmul %n, %w bias(%b : tensor<4xf32>) {transpose_rhs} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  %c2 = fusion.matmul %n, %w2 {transpose_rhs} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  return %c, %c2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A GEMM whose norm epilogue fusion-epilogue-norm already fused (a per-head
// q_norm after a decoder layer's input norm) takes the prologue too.
func.func @fused_epilogue_user(%x: tensor<8x16xf32>, %w: tensor<64x16xf32>, %g: tensor<32xf32>) -> tensor<8x64xf32> {
  // expected-remark @below {{fusion.rms_norm fused as a Lazy Pre-Norm prologue into 1 fusion.fused_matmul op(s); 1 of them with the norm epilogue fusion-epilogue-norm gave it}}
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  %q = fusion.fused_matmul %n, %w norm_weight(%g : tensor<32xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 32 : i64, transpose_rhs}
      : tensor<8x16xf32>, tensor<64x16xf32> -> tensor<8x64xf32>
  return %q : tensor<8x64xf32>
}

