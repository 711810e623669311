// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of fusion.norm_attention and fusion.norm_attention_grad: one
// case per diagnostic. The attention shape checks they share with fusion.gdpa
// are covered in invalid-attention.mlir; one case per op here shows that they
// run. Unless a case says otherwise, q, k, v are [B, L, H, D] = [1, 8, 2, 4],
// so H * D = 8 and the per-token statistics are [1, 8].

// norm_attention rejects f64 data (ODS element-type constraint).
func.func @norm_attention_f64(%q: tensor<1x8x2x4xf64>, %k: tensor<1x8x2x4xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<1x8x2x4xf64>'}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %k
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf64>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf64>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention runs the shared attention checks: here, the jagged query rank.
func.func @norm_attention_jagged_query_rank(%q: tensor<1x8x2x4xf32>, %off: tensor<2xi32>) {
  // expected-error @below {{expected query of rank 3 ([T, H, D] with offsets), but got rank 4}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q offsets(%off : tensor<2xi32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention adds ln_q to the attention output, so v has the head
// dimension of q.
func.func @norm_attention_value_dim(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) {
  // expected-error @below {{expected value with head dimension 4 (the query's, for the residual), but got 6}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %v
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's ln_weight has H * D entries.
func.func @norm_attention_ln_weight_shape(%q: tensor<1x8x2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @below {{expected ln_weight of shape [8] (H * D of query), but got [4]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q ln_weight(%w : tensor<4xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's ln_bias has H * D entries.
func.func @norm_attention_ln_bias_shape(%q: tensor<1x8x2x4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @below {{expected ln_bias of shape [8] (H * D of query), but got [2, 4]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q ln_bias(%b : tensor<2x4xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's rms_weight has H * D entries.
func.func @norm_attention_rms_weight_shape(%q: tensor<1x8x2x4xbf16>, %w: tensor<16xbf16>) {
  // expected-error @below {{expected rms_weight of shape [8] (H * D of query), but got [16]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q rms_weight(%w : tensor<16xbf16>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>
      -> tensor<1x8x2x4xbf16>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention requires the ln_epsilon attribute.
func.func @norm_attention_missing_ln_epsilon(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{'fusion.norm_attention' op requires attribute 'ln_epsilon'}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's ln_epsilon must be finite and >= 0.
func.func @norm_attention_negative_ln_epsilon(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected ln_epsilon to be finite and >= 0, but got -1}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = -1.0 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's rms_epsilon must be finite and >= 0.
func.func @norm_attention_nan_rms_epsilon(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected rms_epsilon to be finite and >= 0, but got NaN}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0x7FC00000 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's output has the shape of the query.
func.func @norm_attention_output_shape(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected output of shape [1, 8, 2, 4] (the shape of query), but got [1, 8, 8]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's ln_mean has one value per query token.
func.func @norm_attention_ln_mean_shape(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected ln_mean of shape [1, 8] (one per query token), but got [8]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return
}

// -----

// norm_attention's ln_rstd has one value per query token.
func.func @norm_attention_ln_rstd_shape(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected ln_rstd of shape [1, 8] (one per query token), but got [1, 8, 2]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8x2xf32>, tensor<1x8xf32>
  return
}

// -----

// Jagged norm_attention's rms_rstd has one value per token, [T].
func.func @norm_attention_rms_rstd_shape(%q: tensor<20x2x4xf32>, %k: tensor<3x8x2x4xf32>,
                                         %off: tensor<4xi64>) {
  // expected-error @below {{expected rms_rstd of shape [20] (one per query token), but got [3, 8]}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %k offsets(%off : tensor<4xi64>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<20x2x4xf32>, tensor<3x8x2x4xf32>, tensor<3x8x2x4xf32>
      -> tensor<20x2x4xf32>, tensor<20xf32>, tensor<20xf32>, tensor<3x8xf32>
  return
}

// -----

// norm_attention_grad rejects integer data (ODS element-type constraint).
func.func @norm_attention_grad_i32(%do: tensor<1x8x2x4xi32>, %q: tensor<1x8x2x4xf32>, %s: tensor<1x8xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<1x8x2x4xi32>'}}
  %dq, %dk, %dv = fusion.norm_attention_grad %do, %q, %q, %q, %s, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xi32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// norm_attention_grad runs the shared norm-attention checks: here, the value
// head dimension.
func.func @norm_attention_grad_value_dim(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x2xf32>,
                                         %s: tensor<1x8xf32>) {
  // expected-error @below {{expected value with head dimension 4 (the query's, for the residual), but got 2}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %q, %v, %s, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x2xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x2xf32>
  return
}

// -----

// norm_attention_grad's grad has the shape of the query.
func.func @norm_attention_grad_grad_shape(%do: tensor<1x4x2x4xf32>, %q: tensor<1x8x2x4xf32>,
                                          %s: tensor<1x8xf32>) {
  // expected-error @below {{expected grad of shape [1, 8, 2, 4] (the shape of query), but got [1, 4, 2, 4]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %do, %q, %q, %q, %s, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x4x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// norm_attention_grad's ln_mean has one value per query token.
func.func @norm_attention_grad_ln_mean_shape(%q: tensor<1x8x2x4xf32>, %s: tensor<1x8xf32>,
                                             %bad: tensor<1x4xf32>) {
  // expected-error @below {{expected ln_mean of shape [1, 8] (one per query token), but got [1, 4]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %q, %q, %bad, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// norm_attention_grad's ln_rstd has one value per query token.
func.func @norm_attention_grad_ln_rstd_shape(%q: tensor<1x8x2x4xf32>, %s: tensor<1x8xf32>,
                                             %bad: tensor<8xf32>) {
  // expected-error @below {{expected ln_rstd of shape [1, 8] (one per query token), but got [8]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %q, %q, %s, %bad, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x8xf32>, tensor<8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// norm_attention_grad's rms_rstd has one value per query token.
func.func @norm_attention_grad_rms_rstd_shape(%q: tensor<1x8x2x4xf32>, %s: tensor<1x8xf32>,
                                              %bad: tensor<2x8xf32>) {
  // expected-error @below {{expected rms_rstd of shape [1, 8] (one per query token), but got [2, 8]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %q, %q, %s, %s, %bad
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<2x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// norm_attention_grad's query_grad has the shape of the query.
func.func @norm_attention_grad_query_grad_shape(%q: tensor<1x8x2x4xf32>, %k: tensor<1x6x2x4xf32>,
                                                %s: tensor<1x8xf32>) {
  // expected-error @below {{expected query_grad of shape [1, 8, 2, 4] (the shape of query), but got [1, 6, 2, 4]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %k, %k, %s, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>
  return
}

// -----

// norm_attention_grad's key_grad has the shape of the key.
func.func @norm_attention_grad_key_grad_shape(%q: tensor<1x8x2x4xf32>, %k: tensor<1x6x2x4xf32>,
                                              %s: tensor<1x8xf32>) {
  // expected-error @below {{expected key_grad of shape [1, 6, 2, 4] (the shape of key), but got [1, 8, 2, 4]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %k, %k, %s, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x6x2x4xf32>
  return
}

// -----

// norm_attention_grad's value_grad has the shape of the value.
func.func @norm_attention_grad_value_grad_shape(%q: tensor<1x8x2x4xf32>, %k: tensor<1x6x2x4xf32>,
                                                %s: tensor<1x8xf32>) {
  // expected-error @below {{expected value_grad of shape [1, 6, 2, 4] (the shape of value), but got [1, 8, 2, 4]}}
  %dq, %dk, %dv = fusion.norm_attention_grad %q, %q, %k, %k, %s, %s, %s
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// norm_attention_grad returns one parameter gradient per weight or bias given.
func.func @norm_attention_grad_param_grad_count(%q: tensor<1x8x2x4xf32>, %s: tensor<1x8xf32>,
                                                %w: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @below {{expected 2 parameter gradient result(s) (one per weight or bias operand), but got 1}}
  %dq, %dk, %dv, %dw = fusion.norm_attention_grad %q, %q, %q, %q, %s, %s, %s
      ln_weight(%w : tensor<8xf32>) ln_bias(%b : tensor<8xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<8xf32>
  return
}

// -----

// norm_attention_grad's parameter gradients have H * D entries, read off the
// query even when the weight's size is dynamic (regression: the size used to
// come from the weight, so a dynamic weight let any size through).
func.func @norm_attention_grad_param_grad_shape(%q: tensor<1x8x2x4xf32>, %s: tensor<1x8xf32>,
                                                %w: tensor<?xf32>) {
  // expected-error @below {{expected parameter gradient of shape [8] (H * D of query), but got [4]}}
  %dq, %dk, %dv, %dw = fusion.norm_attention_grad %q, %q, %q, %q, %s, %s, %s
      rms_weight(%w : tensor<?xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
        tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<4xf32>
  return
}

// -----

// Saved results: ln_q and h both, or neither.
func.func @norm_attention_one_saved(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected 0 or 2 saved results (ln_q and h), but got 1}}
  %o, %m, %r, %rr, %lnq = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// A saved result has the shape of q.
func.func @norm_attention_saved_shape(%q: tensor<1x8x2x4xf32>) {
  // expected-error @below {{expected saved h of shape [1, 8, 2, 4] (the shape of query), but got [1, 8, 8]}}
  %o, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8x2x4xf32>, tensor<1x8x8xf32>
  return
}

// -----

// A saved result has the element type of q (ln_q is the attention's query).
func.func @norm_attention_saved_element_type(%q: tensor<1x8x2x4xbf16>) {
  // expected-error @below {{expected the saved ln_q in the element type of query ('bf16'), but got 'f32'}}
  %o, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %q, %q
      {activation = #fusion.activation<relu>, scale = 1.0 : f32, ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>
      -> tensor<1x8x2x4xbf16>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xbf16>
  return
}
