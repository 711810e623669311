// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of fusion.gdpa and fusion.gdpa_grad: one case per diagnostic.
// The shape checks shared by every attention op (ranks, key, value, offsets)
// are covered here on fusion.gdpa.

// gdpa rejects f64 data (ODS element-type constraint).
func.func @gdpa_f64(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf64>) {
  // expected-error @below {{operand #2 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<1x8x2x16xf64>'}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf64> -> tensor<1x8x2x16xf32>
  return
}

// -----

// gdpa's offsets are i32 or i64 (ODS element-type constraint).
func.func @gdpa_offsets_f32(%q: tensor<64x2x16xf32>, %k: tensor<4x8x2x16xf32>,
                            %v: tensor<4x8x2x16xf32>, %off: tensor<5xf32>) {
  // expected-error @below {{operand #3 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<5xf32>'}}
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32> -> tensor<64x2x16xf32>
  return
}

// -----

// gdpa's activation must be one of the known names (softmax is not one).
func.func @gdpa_unknown_activation(%q: tensor<1x8x2x16xf32>) {
  // expected-error @below {{expected the activation to be one of identity, relu, gelu, gelu_tanh, silu, but got 'softmax'}}
  %o = fusion.gdpa %q, %q, %q {activation = #fusion.activation<softmax>, scale = 1.0 : f32}
      : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>
  return
}

// -----

// gdpa requires the scale attribute.
func.func @gdpa_missing_scale(%q: tensor<1x8x2x16xf32>) {
  // expected-error @below {{'fusion.gdpa' op requires attribute 'scale'}}
  %o = fusion.gdpa %q, %q, %q {activation = #fusion.activation<relu>}
      : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>
  return
}

// -----

// Dense gdpa takes a query [B, Lq, H, D].
func.func @gdpa_dense_query_rank(%q: tensor<64x2x16xf32>, %k: tensor<4x8x2x16xf32>) {
  // expected-error @below {{expected query of rank 4 ([B, Lq, H, D]), but got rank 3}}
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32> -> tensor<64x2x16xf32>
  return
}

// -----

// Jagged gdpa (with offsets) takes a query [T, H, D].
func.func @gdpa_jagged_query_rank(%q: tensor<4x8x2x16xf32>, %off: tensor<5xi32>) {
  // expected-error @below {{expected query of rank 3 ([T, H, D] with offsets), but got rank 4}}
  %o = fusion.gdpa %q, %q, %q offsets(%off : tensor<5xi32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32> -> tensor<4x8x2x16xf32>
  return
}

// -----

// gdpa's key is [B, Lkv, H, D], also with a jagged query.
func.func @gdpa_key_rank(%q: tensor<64x2x16xf32>, %k: tensor<64x2x16xf32>,
                         %v: tensor<4x8x2x16xf32>, %off: tensor<5xi32>) {
  // expected-error @below {{expected key of rank 4 ([B, Lkv, H, D]), but got rank 3}}
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<64x2x16xf32>, tensor<4x8x2x16xf32> -> tensor<64x2x16xf32>
  return
}

// -----

// gdpa's value is [B, Lkv, H, Dv].
func.func @gdpa_value_rank(%q: tensor<1x8x2x16xf32>, %v: tensor<8x2x16xf32>) {
  // expected-error @below {{expected value of rank 4 ([B, Lkv, H, Dv]), but got rank 3}}
  %o = fusion.gdpa %q, %q, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<8x2x16xf32> -> tensor<1x8x2x16xf32>
  return
}

// -----

// Dense gdpa's key has the batch size of the query.
func.func @gdpa_key_batch(%q: tensor<2x8x2x16xbf16>, %k: tensor<3x8x2x16xbf16>) {
  // expected-error @below {{expected key with batch size 2 (the query's), but got 3}}
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xbf16>, tensor<3x8x2x16xbf16>, tensor<3x8x2x16xbf16> -> tensor<2x8x2x16xbf16>
  return
}

// -----

// gdpa's key has the number of heads of the query.
func.func @gdpa_key_heads(%q: tensor<2x8x2x16xf16>, %k: tensor<2x8x4x16xf16>) {
  // expected-error @below {{expected key with 2 heads (the query's), but got 4}}
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16> -> tensor<2x8x2x16xf16>
  return
}

// -----

// gdpa's key has the head dimension of the query.
func.func @gdpa_key_head_dim(%q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x32xf32>) {
  // expected-error @below {{expected key with head dimension 16 (the query's), but got 32}}
  %o = fusion.gdpa %q, %k, %k {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x32xf32>, tensor<2x8x2x32xf32> -> tensor<2x8x2x32xf32>
  return
}

// -----

// gdpa's value has the batch, length and heads of the key.
func.func @gdpa_value_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
                            %v: tensor<2x4x2x16xf32>) {
  // expected-error @below {{expected value of shape [2, 8, 2, 16] (batch, length and heads of key), but got [2, 4, 2, 16]}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32> -> tensor<2x8x2x16xf32>
  return
}

// -----

// gdpa's offsets have B + 1 entries, B being the key's batch size.
func.func @gdpa_offsets_shape(%q: tensor<64x2x16xf32>, %k: tensor<4x8x2x16xf32>, %off: tensor<4xi64>) {
  // expected-error @below {{expected offsets of shape [5] (key batch size + 1), but got [4]}}
  %o = fusion.gdpa %q, %k, %k offsets(%off : tensor<4xi64>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32> -> tensor<64x2x16xf32>
  return
}

// -----

// gdpa's output is the query's shape with the value head dimension innermost.
func.func @gdpa_output_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                             %v: tensor<2x4x2x32xf32>) {
  // expected-error @below {{expected output of shape [2, 8, 2, 32] (query with the value head dimension), but got [2, 8, 2, 16]}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x32xf32> -> tensor<2x8x2x16xf32>
  return
}

// -----

// gdpa's residual (added to the attention) has the shape of the output: the
// value head dimension innermost, not the query's.
func.func @gdpa_residual_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                               %v: tensor<2x4x2x32xf32>) {
  // expected-error @below {{expected residual of shape [2, 8, 2, 32] (the shape of output), but got [2, 8, 2, 16]}}
  %o = fusion.gdpa %q, %k, %v residual(%q : tensor<2x8x2x16xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x32xf32> -> tensor<2x8x2x32xf32>
  return
}

// -----

// With jagged q the residual is [T, H, Dv] too, not the dense [B, L, H, Dv].
func.func @gdpa_residual_jagged(%q: tensor<64x2x16xf32>, %k: tensor<4x8x2x16xf32>,
                                %off: tensor<5xi32>, %r: tensor<4x16x2x16xf32>) {
  // expected-error @below {{expected residual of shape [64, 2, 16] (the shape of output), but got [4, 16, 2, 16]}}
  %o = fusion.gdpa %q, %k, %k offsets(%off : tensor<5xi32>)
      residual(%r : tensor<4x16x2x16xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32> -> tensor<64x2x16xf32>
  return
}

// -----

// gdpa's residual is a float tensor (ODS element-type constraint).
func.func @gdpa_residual_i32(%q: tensor<1x8x2x16xf32>, %r: tensor<1x8x2x16xi32>) {
  // expected-error @below {{operand #3 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<1x8x2x16xi32>'}}
  %o = fusion.gdpa %q, %q, %q residual(%r : tensor<1x8x2x16xi32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>
  return
}

// -----

// gdpa_grad rejects integer data (ODS element-type constraint).
func.func @gdpa_grad_i32(%do: tensor<1x8x2x16xi32>, %q: tensor<1x8x2x16xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<1x8x2x16xi32>'}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %q, %q
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<1x8x2x16xi32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>
      -> tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>
  return
}

// -----

// gdpa_grad runs the shared attention checks: here, the jagged offsets size.
func.func @gdpa_grad_offsets_shape(%do: tensor<64x2x16xf32>, %q: tensor<64x2x16xf32>,
                                   %k: tensor<4x8x2x16xf32>, %off: tensor<9xi32>) {
  // expected-error @below {{expected offsets of shape [5] (key batch size + 1), but got [9]}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %k offsets(%off : tensor<9xi32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>
      -> tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>
  return
}

// -----

// gdpa_grad's grad has the shape of the gdpa output (value head dimension).
func.func @gdpa_grad_grad_shape(%do: tensor<2x8x2x16xf32>, %q: tensor<2x8x2x16xf32>,
                                %k: tensor<2x4x2x16xf32>, %v: tensor<2x4x2x8xf32>) {
  // expected-error @below {{expected grad of shape [2, 8, 2, 8] (the gdpa output), but got [2, 8, 2, 16]}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
  return
}

// -----

// gdpa_grad's query_grad has the shape of the query.
func.func @gdpa_grad_query_grad_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>) {
  // expected-error @below {{expected query_grad of shape [2, 8, 2, 16] (the shape of query), but got [2, 4, 2, 16]}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// gdpa_grad's key_grad has the shape of the key.
func.func @gdpa_grad_key_grad_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>) {
  // expected-error @below {{expected key_grad of shape [2, 4, 2, 16] (the shape of key), but got [2, 8, 2, 16]}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// gdpa_grad's value_grad has the shape of the value.
func.func @gdpa_grad_value_grad_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                      %v: tensor<2x4x2x8xf32>, %do: tensor<2x8x2x8xf32>) {
  // expected-error @below {{expected value_grad of shape [2, 4, 2, 8] (the shape of value), but got [2, 4, 2, 16]}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x8xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// gdpa_grad's residual (added to dq) has the shape of the query.
func.func @gdpa_grad_residual_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                    %r: tensor<2x8x2x8xf32>) {
  // expected-error @below {{expected residual of shape [2, 8, 2, 16] (the shape of query), but got [2, 8, 2, 8]}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k residual(%r : tensor<2x8x2x8xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// With jagged q the residual is [T, H, D] too, not the dense [B, L, H, D].
func.func @gdpa_grad_residual_jagged(%q: tensor<64x2x16xf32>, %k: tensor<4x8x2x16xf32>,
                                     %off: tensor<5xi32>, %r: tensor<4x16x2x16xf32>) {
  // expected-error @below {{expected residual of shape [64, 2, 16] (the shape of query), but got [4, 16, 2, 16]}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k offsets(%off : tensor<5xi32>)
      residual(%r : tensor<4x16x2x16xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>
      -> tensor<64x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>
  return
}

// -----

// grad_residual adds the output gradient to dq: not beside a residual.
func.func @gdpa_grad_grad_residual_and_residual(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>) {
  // expected-error @below {{expected grad_residual or a residual operand, not both (grad_residual adds the output gradient)}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k residual(%q : tensor<2x8x2x16xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32, grad_residual}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// grad_residual adds do [.., Dv] to dq [.., D]: D = Dv.
func.func @gdpa_grad_grad_residual_value_dim(%do: tensor<2x8x2x8xf32>, %q: tensor<2x8x2x16xf32>,
                                             %k: tensor<2x4x2x16xf32>, %v: tensor<2x4x2x8xf32>) {
  // expected-error @below {{expected value with head dimension 16 (the query's, for grad_residual), but got 8}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 1.0 : f32, grad_residual}
      : tensor<2x8x2x8xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
  return
}

// -----

// The prologue's input without its rstd: the custom syntax takes both or
// neither, so this is written in generic form (operandSegmentSizes: grad,
// query, key, value, offsets, residual, rms_input, rms_rstd, rms_weight).
func.func @gdpa_grad_rms_input_without_rstd(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>) {
  // expected-error @below {{expected rms_norm_grad's input and rstd both or neither, but got only its input}}
  %dq, %dk, %dv = "fusion.gdpa_grad"(%q, %q, %k, %k, %q)
      <{activation = #fusion.activation<silu>, scale = 1.0 : f32,
        operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 1, 0, 0>}>
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>,
         tensor<2x8x2x16xf32>)
      -> (tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>)
  return
}

// -----

// rms_weight is the prologue's norm weight: only with rms_norm_grad.
func.func @gdpa_grad_rms_weight_without_prologue(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                                 %w: tensor<32xf32>) {
  // expected-error @below {{expected rms_weight only with rms_norm_grad}}
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %q, %q, %k, %k rms_weight(%w : tensor<32xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<32xf32>
  return
}

// -----

// The prologue's rows have H * Dv values: H * Dv must fit in 64 bits, which
// the element counts do not ensure when the batch is 0.
func.func @gdpa_grad_rms_row_overflow(%do: tensor<0x8x4294967296x4294967296xf32>,
                                      %q: tensor<0x8x4294967296x1xf32>,
                                      %v: tensor<0x8x4294967296x4294967296xf32>,
                                      %r: tensor<0x8xf32>) {
  // expected-error @below {{expected heads x value head dimension (the rms_norm_grad row) to fit in 64 bits, but got 4294967296 x 4294967296}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %q, %v
      rms_norm_grad(%do, %r : tensor<0x8x4294967296x4294967296xf32>, tensor<0x8xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<0x8x4294967296x4294967296xf32>, tensor<0x8x4294967296x1xf32>,
        tensor<0x8x4294967296x1xf32>, tensor<0x8x4294967296x4294967296xf32>
      -> tensor<0x8x4294967296x1xf32>, tensor<0x8x4294967296x1xf32>, tensor<0x8x4294967296x4294967296xf32>
  return
}

// -----

// The prologue's input x has the shape of grad (the normed h, [.., H, Dv]).
func.func @gdpa_grad_rms_input_shape(%do: tensor<2x8x2x8xf32>, %q: tensor<2x8x2x16xf32>,
                                     %k: tensor<2x4x2x16xf32>, %v: tensor<2x4x2x8xf32>,
                                     %r: tensor<2x8xf32>) {
  // expected-error @below {{expected rms_norm_grad input of shape [2, 8, 2, 8] (the shape of grad), but got [2, 8, 2, 16]}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
      rms_norm_grad(%q, %r : tensor<2x8x2x16xf32>, tensor<2x8xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x8xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x8xf32>
  return
}

// -----

// The prologue's rstd has one value per query token.
func.func @gdpa_grad_rms_rstd_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                    %r: tensor<2x8x2xf32>) {
  // expected-error @below {{expected rms_norm_grad rstd of shape [2, 8] (one per query token), but got [2, 8, 2]}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k
      rms_norm_grad(%q, %r : tensor<2x8x2x16xf32>, tensor<2x8x2xf32>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// rms_weight has the H * Dv values of a token's row.
func.func @gdpa_grad_rms_weight_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                      %r: tensor<2x8xf32>, %w: tensor<16xbf16>) {
  // expected-error @below {{expected rms_weight of shape [32] (H * Dv of grad), but got [16]}}
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %q, %q, %k, %k
      rms_norm_grad(%q, %r : tensor<2x8x2x16xf32>, tensor<2x8xf32>) rms_weight(%w : tensor<16xbf16>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<32xf32>
  return
}

// -----

// With rms_weight, its gradient is one more result.
func.func @gdpa_grad_rms_weight_grad_missing(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                             %r: tensor<2x8xf32>, %w: tensor<32xbf16>) {
  // expected-error @below {{expected 1 parameter gradient result(s) (d rms_weight with rms_weight), but got 0}}
  %dq, %dk, %dv = fusion.gdpa_grad %q, %q, %k, %k
      rms_norm_grad(%q, %r : tensor<2x8x2x16xf32>, tensor<2x8xf32>) rms_weight(%w : tensor<32xbf16>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
  return
}

// -----

// d rms_weight is f32 [H * Dv], like rms_weight.
func.func @gdpa_grad_rms_weight_grad_shape(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>,
                                           %r: tensor<2x8xf32>, %w: tensor<32xbf16>) {
  // expected-error @below {{expected rms_weight gradient of shape [32] (H * Dv of grad), but got [16]}}
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %q, %q, %k, %k
      rms_norm_grad(%q, %r : tensor<2x8x2x16xf32>, tensor<2x8xf32>) rms_weight(%w : tensor<32xbf16>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>
      -> tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<16xf32>
  return
}

// -----

// H x D must fit in 64 bits (it sizes the norms of norm_attention); q's
// element count overflows first, and every op checks that.
func.func @gdpa_hidden_size_overflow(%q: tensor<1x8x4294967296x4294967296xf32>,
                                     %k: tensor<1x8x4294967296x4294967296xf32>,
                                     %v: tensor<1x8x4294967296x16xf32>) {
  // expected-error @below {{'fusion.gdpa' op expected operand #0 of type 'tensor<1x8x4294967296x4294967296xf32>' to have an element count that fits in 64 bits (at most 2^63 - 1), but [1, 8, 4294967296, 4294967296] overflows it}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x4294967296x4294967296xf32>, tensor<1x8x4294967296x4294967296xf32>, tensor<1x8x4294967296x16xf32> -> tensor<1x8x4294967296x16xf32>
  return
}

// -----

// Jagged offsets have batch + 1 entries, which must fit in 64 bits; key's
// element count overflows first, and every op checks that.
func.func @gdpa_offsets_batch_overflow(%q: tensor<64x2x16xf32>, %k: tensor<9223372036854775807x8x2x16xf32>,
                                       %v: tensor<9223372036854775807x8x2x16xf32>, %off: tensor<5xi32>) {
  // expected-error @below {{'fusion.gdpa' op expected operand #1 of type 'tensor<9223372036854775807x8x2x16xf32>' to have an element count that fits in 64 bits (at most 2^63 - 1), but [9223372036854775807, 8, 2, 16] overflows it}}
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<64x2x16xf32>, tensor<9223372036854775807x8x2x16xf32>, tensor<9223372036854775807x8x2x16xf32> -> tensor<64x2x16xf32>
  return
}
