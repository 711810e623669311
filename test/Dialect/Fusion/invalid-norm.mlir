// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the forward normalization ops, fusion.rms_norm and
// fusion.layer_norm: one case per diagnostic.

// rms_norm rejects integer data (ODS element-type constraint).
func.func @rms_norm_i32(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xi32>'}}
  %y = fusion.rms_norm %x {epsilon = 0.5 : f32} : tensor<4x8xi32> -> tensor<4x8xi32>
  return %y : tensor<4x8xi32>
}

// -----

// rms_norm requires an f32 rstd result (ODS element-type constraint).
func.func @rms_norm_rstd_bf16(%x: tensor<4x8xbf16>) -> tensor<4xbf16> {
  // expected-error @below {{result #1 must be ranked tensor of 32-bit float values, but got 'tensor<4xbf16>'}}
  %y, %r = fusion.rms_norm %x {epsilon = 0.5 : f32}
      : tensor<4x8xbf16> -> tensor<4x8xbf16>, tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

// rms_norm normalizes over the innermost dimension, so the input needs rank >= 1.
func.func @rms_norm_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'fusion.rms_norm' op expected input of rank >= 1 (normalized over its innermost dimension), but got rank 0}}
  %y = fusion.rms_norm %x {epsilon = 0.5 : f32} : tensor<f32> -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// rms_norm requires the epsilon attribute.
func.func @rms_norm_missing_epsilon(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'fusion.rms_norm' op requires attribute 'epsilon'}}
  %y = fusion.rms_norm %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// rms_norm's epsilon is an f32 attribute, not f64.
func.func @rms_norm_epsilon_f64(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{attribute 'epsilon' failed to satisfy constraint: 32-bit float attribute}}
  %y = fusion.rms_norm %x {epsilon = 0.5 : f64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// rms_norm rejects a negative epsilon.
func.func @rms_norm_negative_epsilon(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected epsilon to be finite and >= 0, but got -0.25}}
  %y = fusion.rms_norm %x {epsilon = -0.25 : f32} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// rms_norm's weight has the innermost dimension of the input.
func.func @rms_norm_weight_shape(%x: tensor<4x8xbf16>, %w: tensor<4xbf16>) -> tensor<4x8xbf16> {
  // expected-error @below {{expected weight of shape [8] (innermost dimension of input), but got [4]}}
  %y = fusion.rms_norm %x weight(%w : tensor<4xbf16>) {epsilon = 0.5 : f32}
      : tensor<4x8xbf16> -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// rms_norm's output has the shape of the input.
func.func @rms_norm_output_shape(%x: tensor<4x8xf16>) -> tensor<8x4xf16> {
  // expected-error @below {{expected output of shape [4, 8] (the shape of input), but got [8, 4]}}
  %y = fusion.rms_norm %x {epsilon = 0.5 : f32} : tensor<4x8xf16> -> tensor<8x4xf16>
  return %y : tensor<8x4xf16>
}

// -----

// rms_norm's rstd has one value per row: the input without its innermost dimension.
func.func @rms_norm_rstd_shape(%x: tensor<2x4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @below {{expected rstd of shape [2, 4] (input without its innermost dimension), but got [2, 8]}}
  %y, %r = fusion.rms_norm %x {epsilon = 0.5 : f32}
      : tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// layer_norm rejects f64 data (ODS element-type constraint).
func.func @layer_norm_f64(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xf64>'}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<4x8xf64> -> tensor<4x8xf64>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4x8xf64>
}

// -----

// layer_norm needs an input of rank >= 1.
func.func @layer_norm_rank0(%x: tensor<bf16>) -> tensor<bf16> {
  // expected-error @below {{'fusion.layer_norm' op expected input of rank >= 1 (normalized over its innermost dimension), but got rank 0}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<bf16> -> tensor<bf16>, tensor<f32>, tensor<f32>
  return %y : tensor<bf16>
}

// -----

// layer_norm requires the epsilon attribute.
func.func @layer_norm_missing_epsilon(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'fusion.layer_norm' op requires attribute 'epsilon'}}
  %y, %m, %r = fusion.layer_norm %x : tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4x8xf32>
}

// -----

// layer_norm rejects a NaN epsilon.
func.func @layer_norm_nan_epsilon(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected epsilon to be finite and >= 0, but got NaN}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0x7FC00000 : f32}
      : tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4x8xf32>
}

// -----

// layer_norm's weight has the innermost dimension of the input.
func.func @layer_norm_weight_shape(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected weight of shape [8] (innermost dimension of input), but got [4, 8]}}
  %y, %m, %r = fusion.layer_norm %x weight(%w : tensor<4x8xf32>) {epsilon = 0.5 : f32}
      : tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4x8xf32>
}

// -----

// layer_norm's bias has the innermost dimension of the input.
func.func @layer_norm_bias_shape(%x: tensor<4x8xf32>, %b: tensor<16xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected bias of shape [8] (innermost dimension of input), but got [16]}}
  %y, %m, %r = fusion.layer_norm %x bias(%b : tensor<16xf32>) {epsilon = 0.5 : f32}
      : tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4x8xf32>
}

// -----

// layer_norm's output has the shape of the input.
func.func @layer_norm_output_shape(%x: tensor<4x8xbf16>) -> tensor<4x9xbf16> {
  // expected-error @below {{expected output of shape [4, 8] (the shape of input), but got [4, 9]}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<4x8xbf16> -> tensor<4x9xbf16>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4x9xbf16>
}

// -----

// layer_norm's mean has one value per row.
func.func @layer_norm_mean_shape(%x: tensor<4x8xf16>) -> tensor<8xf32> {
  // expected-error @below {{expected mean of shape [4] (input without its innermost dimension), but got [8]}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<4x8xf16> -> tensor<4x8xf16>, tensor<8xf32>, tensor<4xf32>
  return %m : tensor<8xf32>
}

// -----

// layer_norm's rstd has one value per row.
func.func @layer_norm_rstd_shape(%x: tensor<4x8xf16>) -> tensor<4x1xf32> {
  // expected-error @below {{expected rstd of shape [4] (input without its innermost dimension), but got [4, 1]}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<4x8xf16> -> tensor<4x8xf16>, tensor<4xf32>, tensor<4x1xf32>
  return %r : tensor<4x1xf32>
}

// -----

// With a dynamic input, rms_norm's weight fixes N for the output.
func.func @rms_norm_weight_output_disagree(%x: tensor<?x?xbf16>, %w: tensor<128xbf16>) -> tensor<?x64xbf16> {
  // expected-error @below {{expected output of shape [?, 128] (the shape of input; 128 from weight), but got [?, 64]}}
  %y = fusion.rms_norm %x weight(%w : tensor<128xbf16>) {epsilon = 0.5 : f32}
      : tensor<?x?xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// With a dynamic input, layer_norm's output fixes the rows for rstd.
func.func @layer_norm_mean_rstd_disagree(%x: tensor<?x8xf32>) -> tensor<5xf32> {
  // expected-error @below {{expected rstd of shape [4] (input without its innermost dimension; 4 from output), but got [5]}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<?x8xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<5xf32>
  return %r : tensor<5xf32>
}
