// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of fusion.fused_matmul: one case per diagnostic. Unless a case
// says otherwise, A is [M, K] = [64, 32] and B is [K, N] = [32, 16].

// fused_matmul rejects integer data (ODS element-type constraint).
func.func @fused_i32(%a: tensor<64x32xi32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<64x32xi32>'}}
  %y = fusion.fused_matmul %a, %b : tensor<64x32xi32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// fused_matmul's statistics and parameter gradients are f32 (ODS constraint).
func.func @fused_extra_bf16(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) {
  // expected-error @below {{result #1 must be variadic of ranked tensor of 32-bit float values, but got 'tensor<64xbf16>'}}
  %y, %r = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32, save_stats}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>, tensor<64xbf16>
  return
}

// -----

// fused_matmul's epilogue must be one of the known kinds.
func.func @fused_unknown_epilogue(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected the epilogue to be one of none, row_scale, rms_norm, layer_norm, rms_norm_grad, layer_norm_grad, but got 'softmax'}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<softmax>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// fused_matmul's prologue must be one of the known kinds.
func.func @fused_unknown_prologue(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected the prologue to be one of none, rms_norm, layer_norm, but got 'batch_norm'}}
  %y = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<batch_norm>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// A kind is a bare keyword, not a string.
func.func @fused_quoted_epilogue(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected the epilogue to be one of none, row_scale, rms_norm, layer_norm, rms_norm_grad, layer_norm_grad (a bare keyword)}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<"rms_norm">}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// fused_matmul's output is a matrix.
func.func @fused_output_rank(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected output of rank 2, but got rank 3}}
  %y = fusion.fused_matmul %a, %b : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<1x64x16xf32>
  return
}

// -----

// fused_matmul's contraction dimensions must match; with transpose_rhs, B is [N, K].
func.func @fused_contraction(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected the contraction dimensions of lhs and rhs to match, but got K = 32 (lhs) and K = 16 (rhs)}}
  %y = fusion.fused_matmul %a, %b {transpose_rhs}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x32xf32>
  return
}

// -----

// fused_matmul's output is [M, N].
func.func @fused_output_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected output of shape [64, 16] ([M, N]), but got [64, 32]}}
  %y = fusion.fused_matmul %a, %b : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x32xf32>
  return
}

// -----

// A prologue needs its prologue_epsilon.
func.func @fused_missing_prologue_epsilon(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected prologue_epsilon with prologue layer_norm}}
  %y = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<layer_norm>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// A prologue normalizes A's rows: no transpose_lhs with it.
func.func @fused_prologue_transpose_lhs(%a: tensor<32x64xbf16>, %b: tensor<32x16xbf16>) {
  // expected-error @below {{unexpected transpose_lhs with prologue rms_norm (the prologue normalizes the rows of A, which transpose_lhs stores as columns of lhs)}}
  %y = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_lhs}
      : tensor<32x64xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// prologue_epsilon is only meaningful with a prologue.
func.func @fused_unexpected_prologue_epsilon(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{unexpected prologue_epsilon without a prologue}}
  %y = fusion.fused_matmul %a, %b {prologue_epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// A forward norm epilogue needs its epsilon.
func.func @fused_missing_epsilon(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected epsilon with epilogue layer_norm}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the forward norm epilogues take an epsilon.
func.func @fused_unexpected_epsilon(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %s: tensor<64xf32>) {
  // expected-error @below {{unexpected epsilon with epilogue row_scale}}
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<64xf32>)
      {epilogue = #fusion.epilogue<row_scale>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// save_stats is only meaningful with a forward norm epilogue.
func.func @fused_unexpected_save_stats(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>,
                                       %x: tensor<64x16xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{unexpected save_stats with epilogue rms_norm_grad (only rms_norm and layer_norm save statistics)}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>, save_stats}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// with_bias_grad is only meaningful with the layer_norm_grad epilogue.
func.func @fused_unexpected_with_bias_grad(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{unexpected with_bias_grad with epilogue layer_norm}}
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32, with_bias_grad}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// prologue_epsilon must be finite and >= 0.
func.func @fused_negative_prologue_epsilon(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected prologue_epsilon to be finite and >= 0, but got -0.5}}
  %y = fusion.fused_matmul %a, %b
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = -0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The epilogue epsilon must be finite and >= 0 (an infinity is rejected).
func.func @fused_infinite_epsilon(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected epsilon to be finite and >= 0, but got +Inf}}
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0x7F800000 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The row_scale epilogue needs its row_scale operand.
func.func @fused_missing_row_scale(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected a row_scale operand with epilogue row_scale}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<row_scale>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the row_scale epilogue takes a row_scale operand.
func.func @fused_unexpected_row_scale(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %s: tensor<64xf32>) {
  // expected-error @below {{unexpected row_scale operand with epilogue none}}
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<64xf32>)
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The grad epilogues need the forward norm_input.
func.func @fused_missing_norm_input(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{expected a norm_input operand with epilogue rms_norm_grad}}
  %y = fusion.fused_matmul %a, %b rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the grad epilogues take a norm_input.
func.func @fused_unexpected_norm_input(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>) {
  // expected-error @below {{unexpected norm_input operand with epilogue rms_norm}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The grad epilogues need the saved rstd.
func.func @fused_missing_rstd(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>,
                              %m: tensor<64xf32>) {
  // expected-error @below {{expected a rstd operand with epilogue layer_norm_grad}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) mean(%m : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the grad epilogues take an rstd operand.
func.func @fused_unexpected_rstd(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{unexpected rstd operand with epilogue layer_norm}}
  %y = fusion.fused_matmul %a, %b rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The layer_norm_grad epilogue needs the saved mean.
func.func @fused_missing_mean(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>,
                              %r: tensor<64xf32>) {
  // expected-error @below {{expected a mean operand with epilogue layer_norm_grad}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the layer_norm_grad epilogue takes a mean operand.
func.func @fused_unexpected_mean(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>,
                                 %m: tensor<64xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{unexpected mean operand with epilogue rms_norm_grad}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) mean(%m : tensor<64xf32>)
      rstd(%r : tensor<64xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the norm epilogues (forward and grad) take a norm_weight.
func.func @fused_unexpected_norm_weight(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>) {
  // expected-error @below {{unexpected norm_weight operand with epilogue none}}
  %y = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>)
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the layer_norm epilogue takes a norm_bias.
func.func @fused_unexpected_norm_bias(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %nb: tensor<16xf32>) {
  // expected-error @below {{unexpected norm_bias operand with epilogue rms_norm (only layer_norm takes a bias)}}
  %y = fusion.fused_matmul %a, %b norm_bias(%nb : tensor<16xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// Only the grad epilogues take their row sums from a row dot.
func.func @fused_row_dot_epilogue(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{unexpected row_dot operand with epilogue rms_norm (only the grad epilogues take their row sums from a row dot)}}
  %o, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) row_dot(%y : tensor<64x32xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32, save_stats}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<64xf32>
  return
}

// -----

// The row dot's vectors come with a row dot.
func.func @fused_row_dot_shift_alone(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %c: tensor<32xf32>) {
  // expected-error @below {{unexpected row_dot_shift operand without row_dot}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot_shift(%c : tensor<32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @fused_row_dot_sum_alone(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %m: tensor<64xf32>, %r: tensor<64xf32>, %c: tensor<32xf32>) {
  // expected-error @below {{unexpected row_dot_sum operand without row_dot}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) mean(%m : tensor<64xf32>) rstd(%r : tensor<64xf32>)
      row_dot_sum(%c : tensor<32xf32>) {epilogue = #fusion.epilogue<layer_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// The row dot replaces sums over a x_hat with a = dh * weight: a weightless
// norm's gradient has no such form here.
func.func @fused_row_dot_no_weight(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{expected a norm_weight operand with row_dot (a weightless norm's gradient is regrouped with normalized_input instead)}}
  %y2 = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// LayerNorm's gradient also sums a: row_dot_sum.
func.func @fused_row_dot_ln_no_sum(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %m: tensor<64xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{expected a row_dot_sum operand with row_dot and epilogue layer_norm_grad (the row sum of a)}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) mean(%m : tensor<64xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) {epilogue = #fusion.epilogue<layer_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @fused_row_dot_rms_sum(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>, %c: tensor<32xf32>) {
  // expected-error @below {{unexpected row_dot_sum operand with epilogue rms_norm_grad (only LayerNorm's gradient sums a)}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) row_dot_sum(%c : tensor<32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// The row dots stand for the row sums of lhs @ rhs: no col_bias.
func.func @fused_row_dot_col_bias(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %cb: tensor<16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{unexpected col_bias operand with row_dot (the row dots stand for the row sums of lhs @ rhs alone)}}
  %y2, %dw = fusion.fused_matmul %a, %b col_bias(%cb : tensor<16xf32>) norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// The row dot reads A's rows as lhs holds them.
func.func @fused_row_dot_transpose_lhs(%a: tensor<32x64xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{unexpected row_dot operand with transpose_lhs (the row dot reads A's rows as lhs holds them, unscaled)}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, transpose_lhs}
      : tensor<32x64xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// ... unscaled: a prologue would scale them.
func.func @fused_row_dot_prologue(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{unexpected row_dot operand with a prologue (the row dot reads A's rows as lhs holds them, unscaled)}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>,
       prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// With normalized_input the gradient reads x_hat: no next layer needed.
func.func @fused_row_dot_normalized(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>) {
  // expected-error @below {{unexpected row_dot operand with normalized_input (a weightless norm's row sum needs no next layer)}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// The row dot has A's shape [M, K] ...
func.func @fused_row_dot_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x16xf32>) {
  // expected-error @below {{expected row_dot of shape [64, 32] ([M, K], the shape of lhs), but got [64, 16]}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x16xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// ... and its vectors are [K].
func.func @fused_row_dot_shift_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>, %x: tensor<64x16xf32>, %r: tensor<64xf32>, %y: tensor<64x32xf32>, %c: tensor<16xf32>) {
  // expected-error @below {{expected row_dot_shift of shape [32] ([K], a vector over lhs's columns), but got [16]}}
  %y2, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>) norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      row_dot(%y : tensor<64x32xf32>) row_dot_shift(%c : tensor<16xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// post_residual is [M, N].
func.func @fused_post_residual_shape(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %x: tensor<64x32xbf16>) {
  // expected-error @below {{expected post_residual of shape [64, 16] ([M, N]), but got [64, 32]}}
  %y = fusion.fused_matmul %a, %b post_residual(%x : tensor<64x32xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// post_residual is added to a forward norm's output only.
func.func @fused_post_residual_no_norm(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %x: tensor<64x16xbf16>) {
  // expected-error @below {{unexpected post_residual operand with epilogue none (it is added to the output of an rms_norm or layer_norm epilogue)}}
  %y = fusion.fused_matmul %a, %b post_residual(%x : tensor<64x16xbf16>)
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// The residual is [M, N].
func.func @fused_residual_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %res: tensor<64x32xf32>) {
  // expected-error @below {{expected residual of shape [64, 16] ([M, N]), but got [64, 32]}}
  %y = fusion.fused_matmul %a, %b residual(%res : tensor<64x32xf32>)
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The row_scale is [M].
func.func @fused_row_scale_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %s: tensor<16xf32>) {
  // expected-error @below {{expected row_scale of shape [64] ([M]), but got [16]}}
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<16xf32>)
      {epilogue = #fusion.epilogue<row_scale>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The col_bias is [N].
func.func @fused_col_bias_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %cb: tensor<32xf32>) {
  // expected-error @below {{expected col_bias of shape [16] ([N]), but got [32]}}
  %y = fusion.fused_matmul %a, %b col_bias(%cb : tensor<32xf32>)
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The norm_weight is [N].
func.func @fused_norm_weight_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<32xf32>) {
  // expected-error @below {{expected norm_weight of shape [16] ([N]), but got [32]}}
  %y = fusion.fused_matmul %a, %b norm_weight(%w : tensor<32xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The norm_bias is [N].
func.func @fused_norm_bias_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %nb: tensor<1x16xf32>) {
  // expected-error @below {{expected norm_bias of shape [16] ([N]), but got [1, 16]}}
  %y = fusion.fused_matmul %a, %b norm_bias(%nb : tensor<1x16xf32>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The norm_input is [M, N].
func.func @fused_norm_input_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x32xf32>,
                                  %r: tensor<64xf32>) {
  // expected-error @below {{expected norm_input of shape [64, 16] ([M, N]), but got [64, 32]}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x32xf32>) rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The mean is [M].
func.func @fused_mean_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>,
                            %m: tensor<16xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{expected mean of shape [64] ([M]), but got [16]}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) mean(%m : tensor<16xf32>)
      rstd(%r : tensor<64xf32>) {epilogue = #fusion.epilogue<layer_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The rstd is [M].
func.func @fused_rstd_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %x: tensor<64x16xf32>,
                            %r: tensor<32xf32>) {
  // expected-error @below {{expected rstd of shape [64] ([M]), but got [32]}}
  %y = fusion.fused_matmul %a, %b norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<32xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// A forward norm epilogue with save_stats returns its statistics.
func.func @fused_missing_statistics(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected 2 extra result(s) for epilogue layer_norm (statistics with save_stats), but got 1}}
  %y, %m = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32, save_stats}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<64xf32>
  return
}

// -----

// A grad epilogue returns dweight with norm_weight and dbias with with_bias_grad.
func.func @fused_missing_param_grads(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>,
                                     %x: tensor<64x16xf32>, %m: tensor<64xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{expected 2 extra result(s) for epilogue layer_norm_grad (parameter gradients), but got 1}}
  %y, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>)
      norm_input(%x : tensor<64x16xf32>) mean(%m : tensor<64xf32>) rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// Without a norm epilogue there are no extra results (regression: the message
// used to call them "parameter gradients").
func.func @fused_unexpected_extra(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected 0 extra result(s) for epilogue none, but got 1}}
  %y, %e = fusion.fused_matmul %a, %b
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<64xf32>
  return
}

// -----

// The saved statistics of a forward norm epilogue are [M].
func.func @fused_statistics_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected statistics result of shape [64] ([M]), but got [16]}}
  %y, %r = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32, save_stats}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
  return
}

// -----

// The parameter gradients of a grad epilogue are [N].
func.func @fused_param_grad_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %w: tensor<16xf32>,
                                  %x: tensor<64x16xf32>, %r: tensor<64xf32>) {
  // expected-error @below {{expected parameter gradient result of shape [16] ([N]), but got [64]}}
  %y, %dw = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xf32>)
      norm_input(%x : tensor<64x16xf32>) rstd(%r : tensor<64xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<64xf32>
  return
}

// -----

// With N dynamic in rhs and output, norm_weight fixes it for norm_bias.
func.func @fused_norm_weight_bias_disagree(%a: tensor<64x32xf32>, %b: tensor<32x?xf32>, %w: tensor<128xf32>, %nb: tensor<64xf32>) {
  // expected-error @below {{expected norm_bias of shape [128] ([N]), but got [64]}}
  %y = fusion.fused_matmul %a, %b norm_weight(%w : tensor<128xf32>) norm_bias(%nb : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x?xf32> -> tensor<64x?xf32>
  return
}

// -----

// With N dynamic in rhs, the output fixes it for col_bias.
func.func @fused_output_col_bias_disagree(%a: tensor<64x32xf32>, %b: tensor<32x?xf32>, %s: tensor<64xf32>, %cb: tensor<32xf32>) {
  // expected-error @below {{expected col_bias of shape [16] ([N]), but got [32]}}
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<64xf32>) col_bias(%cb : tensor<32xf32>)
      {epilogue = #fusion.epilogue<row_scale>}
      : tensor<64x32xf32>, tensor<32x?xf32> -> tensor<64x16xf32>
  return
}

// -----

// col_sum holds colsum(B) for the layer_norm prologue only.
func.func @fused_col_sum_rms_prologue(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %cs: tensor<16xf32>) {
  // expected-error @below {{unexpected col_sum operand with prologue rms_norm (only the layer_norm prologue subtracts mean x colsum(B))}}
  %y = fusion.fused_matmul %a, %b col_sum(%cs : tensor<16xf32>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The col_sum is [N].
func.func @fused_col_sum_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %cs: tensor<32xf32>) {
  // expected-error @below {{expected col_sum of shape [16] ([N]), but got [32]}}
  %y = fusion.fused_matmul %a, %b col_sum(%cs : tensor<32xf32>)
      {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The col_sum is f32, whatever B's element type.
func.func @fused_col_sum_type(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %cs: tensor<16xbf16>) {
  // expected-error @below {{operand #2 must be ranked tensor of 32-bit float values, but got 'tensor<16xbf16>'}}
  %y = fusion.fused_matmul %a, %b col_sum(%cs : tensor<16xbf16>)
      {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// save_norm_input is only meaningful with a forward norm epilogue.
func.func @fused_unexpected_save_norm_input(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{unexpected save_norm_input with epilogue none (only rms_norm and layer_norm save their input)}}
  %y, %h = fusion.fused_matmul %a, %b {save_norm_input}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32> saved_norm_input(tensor<64x16xf32>)
  return
}

// -----

// save_norm_input adds the saved_norm_input result.
func.func @fused_missing_saved_norm_input(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{expected a saved_norm_input result with save_norm_input}}
  %y = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}

// -----

// The saved_norm_input result comes with save_norm_input only.
func.func @fused_unexpected_saved_norm_input(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) {
  // expected-error @below {{unexpected saved_norm_input result without save_norm_input}}
  %y, %h = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32> saved_norm_input(tensor<64x16xf32>)
  return
}

// -----

// The saved norm input has the output's type (rounded as the output is).
func.func @fused_saved_norm_input_type(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) {
  // expected-error @below {{expected saved_norm_input of the output's type 'tensor<64x16xbf16>', but got 'tensor<64x16xf32>'}}
  %y, %h, %r = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16> saved_norm_input(tensor<64x16xf32>), tensor<64xf32>
  return
}

// -----

// norm_group_size: only the forward norms normalize column groups.
func.func @fused_group_without_norm(%a: tensor<64x32xf32>, %b: tensor<32x256xf32>) {
  // expected-error @below {{unexpected norm_group_size with epilogue none (only rms_norm and layer_norm normalize column groups)}}
  %0 = fusion.fused_matmul %a, %b {norm_group_size = 128 : i64}
      : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  return
}

// -----

func.func @fused_group_zero(%a: tensor<64x32xf32>, %b: tensor<32x256xf32>) {
  // expected-error @below {{expected norm_group_size > 0, but got 0}}
  %0 = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 0 : i64}
      : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  return
}

// -----

// N = 256 is not a whole number of groups of 96.
func.func @fused_group_not_dividing(%a: tensor<64x32xf32>, %b: tensor<32x256xf32>) {
  // expected-error @below {{expected norm_group_size to divide N (a row is N / norm_group_size groups), but got N = 256 and norm_group_size = 96}}
  %0 = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 96 : i64}
      : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  return
}

// -----

// The groups share one weight of the group's size (a per-head norm's).
func.func @fused_group_weight(%a: tensor<64x32xf32>, %b: tensor<32x256xf32>, %w: tensor<256xf32>) {
  // expected-error @below {{expected norm_weight of shape [128] ([norm_group_size], shared by the groups), but got [256]}}
  %0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64}
      : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  return
}

// -----

// Statistics per row and group.
func.func @fused_group_stats(%a: tensor<64x32xf32>, %b: tensor<32x256xf32>) {
  // expected-error @below {{expected statistics result of shape [64, 2] ([M, N / norm_group_size], per row and group), but got [64]}}
  %0, %1 = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, save_stats}
      : tensor<64x32xf32>, tensor<32x256xf32> -> tensor<64x256xf32>, tensor<64xf32>
  return
}

// -----

// An activation follows an element-wise epilogue only.
func.func @fused_activation_norm(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) {
  // expected-error @below {{unexpected activation with epilogue rms_norm (only the none and row_scale epilogues apply one)}}
  %y = fusion.fused_matmul %a, %b
      {activation = #fusion.activation<silu>, epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// No residual enters an activation.
func.func @fused_activation_residual(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %r: tensor<64x16xbf16>) {
  // expected-error @below {{unexpected residual operand with activation (the residual stream adds after the MLP's second GEMM, not to its activation)}}
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<64x16xbf16>)
      {activation = #fusion.activation<gelu>}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// up is the gated product's second weight: it needs the activation.
func.func @fused_up_no_activation(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %u: tensor<32x16xbf16>) {
  // expected-error @below {{expected an activation with up (the gated product act(A @ rhs) * (A @ up))}}
  %y = fusion.fused_matmul %a, %b up(%u : tensor<32x16xbf16>)
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// up has rhs's type.
func.func @fused_up_type(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %u: tensor<32x8xbf16>) {
  // expected-error @below {{expected up of rhs's type 'tensor<32x16xbf16>' (the gated product's second weight), but got 'tensor<32x8xbf16>'}}
  %y = fusion.fused_matmul %a, %b up(%u : tensor<32x8xbf16>)
      {activation = #fusion.activation<silu>}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// The gated product takes no bias.
func.func @fused_up_col_bias(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %u: tensor<32x16xbf16>, %c: tensor<16xbf16>) {
  // expected-error @below {{unexpected col_bias operand with up (the gated product takes no bias)}}
  %y = fusion.fused_matmul %a, %b col_bias(%c : tensor<16xbf16>) up(%u : tensor<32x16xbf16>)
      {activation = #fusion.activation<silu>}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// The LayerNorm prologue's correction is of rhs alone.
func.func @fused_up_layer_norm_prologue(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %u: tensor<32x16xbf16>) {
  // expected-error @below {{unexpected up with prologue layer_norm (its correction, mean x colsum(B), is of rhs alone)}}
  %y = fusion.fused_matmul %a, %b up(%u : tensor<32x16xbf16>)
      {activation = #fusion.activation<silu>, prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// rope: both tables or neither (the generic form can give one).
func.func @fused_rope_one_table(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x8xbf16>) {
  // expected-error @below {{expected both rope tables (cos and sin) or neither}}
  %y = "fusion.fused_matmul"(%a, %b, %c) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, rope_head_dim = 8 : i64}>
      : (tensor<64x32xbf16>, tensor<32x16xbf16>, tensor<64x8xbf16>) -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_head_dim_alone(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) {
  // expected-error @below {{unexpected rope_head_dim without rope tables}}
  %y = fusion.fused_matmul %a, %b {rope_head_dim = 8 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_interleaved_alone(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) {
  // expected-error @below {{unexpected rope_interleaved without rope tables}}
  %y = fusion.fused_matmul %a, %b {rope_interleaved}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_no_head_dim(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x8xbf16>) {
  // expected-error @below {{expected rope_head_dim with rope tables}}
  %y = fusion.fused_matmul %a, %b rope(%c, %c : tensor<64x8xbf16>, tensor<64x8xbf16>)
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_norm(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x8xbf16>) {
  // expected-error @below {{unexpected rope with epilogue rms_norm (only the none and row_scale epilogues rotate their output)}}
  %y = fusion.fused_matmul %a, %b rope(%c, %c : tensor<64x8xbf16>, tensor<64x8xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, rope_head_dim = 8 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_residual(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %r: tensor<64x16xbf16>, %c: tensor<64x8xbf16>) {
  // expected-error @below {{unexpected rope with a residual (it rotates a q or k projection's output)}}
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<64x16xbf16>) rope(%c, %c : tensor<64x8xbf16>, tensor<64x8xbf16>)
      {rope_head_dim = 8 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_sin_type(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x8xbf16>, %s: tensor<64x8xf32>) {
  // expected-error @below {{expected the rope sin table of cos's type 'tensor<64x8xbf16>', but got 'tensor<64x8xf32>'}}
  %y = fusion.fused_matmul %a, %b rope(%c, %s : tensor<64x8xbf16>, tensor<64x8xf32>)
      {rope_head_dim = 8 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_table_rank(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<2x32x8xbf16>) {
  // expected-error @below {{expected rope tables of rank 2 ([T, R]), but got [2, 32, 8]}}
  %y = fusion.fused_matmul %a, %b rope(%c, %c : tensor<2x32x8xbf16>, tensor<2x32x8xbf16>)
      {rope_head_dim = 8 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_head_dim(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x8xbf16>) {
  // expected-error @below {{expected rope_head_dim > 0 dividing N (heads x head_dim), but got rope_head_dim = 12 and N = 16}}
  %y = fusion.fused_matmul %a, %b rope(%c, %c : tensor<64x8xbf16>, tensor<64x8xbf16>)
      {rope_head_dim = 12 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_rotary_dim(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x6xbf16>) {
  // expected-error @below {{expected a static, even rotary dimension R in [2, rope_head_dim = 4] ([T, R] tables), but got [64, 6]}}
  %y = fusion.fused_matmul %a, %b rope(%c, %c : tensor<64x6xbf16>, tensor<64x6xbf16>)
      {rope_head_dim = 4 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @fused_rope_table_rows(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<48x8xbf16>) {
  // expected-error @below {{expected the rope tables' rows T to divide M (row m reads table row m mod T), but got T = 48 and M = 64}}
  %y = fusion.fused_matmul %a, %b rope(%c, %c : tensor<48x8xbf16>, tensor<48x8xbf16>)
      {rope_head_dim = 8 : i64}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// col_scale scales the plain GEMM's columns: not a norm epilogue's.
func.func @fused_col_scale_norm_epilogue(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %g: tensor<16xbf16>) {
  // expected-error @below {{unexpected col_scale operand with epilogue rms_norm (only the none and row_scale epilogues scale columns)}}
  %y = fusion.fused_matmul %a, %b col_scale(%g : tensor<16xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// col_scale scales acc, which an activation would not output as it is.
func.func @fused_col_scale_activation(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %g: tensor<16xbf16>) {
  // expected-error @below {{unexpected col_scale operand with an activation (the scale applies to acc, which then is the output)}}
  %y = fusion.fused_matmul %a, %b col_scale(%g : tensor<16xbf16>)
      {activation = #fusion.activation<silu>}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// The col_scale is [N].
func.func @fused_col_scale_shape(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %g: tensor<32xf32>) {
  // expected-error @below {{expected col_scale of shape [16] ([N]), but got [32]}}
  %y = fusion.fused_matmul %a, %b col_scale(%g : tensor<32xf32>)
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return
}
