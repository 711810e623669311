// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the normalization gradients, fusion.rms_norm_grad and
// fusion.layer_norm_grad: one case per diagnostic.

// rms_norm_grad rejects integer data (ODS element-type constraint).
func.func @rms_norm_grad_i32(%dy: tensor<4x8xi32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xi32>'}}
  %dx = fusion.rms_norm_grad %dy, %x, %r
      : tensor<4x8xi32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// rms_norm_grad needs an input of rank >= 1.
func.func @rms_norm_grad_rank0(%dy: tensor<f32>, %x: tensor<f32>, %r: tensor<f32>) {
  // expected-error @below {{'fusion.rms_norm_grad' op expected input of rank >= 1 (normalized over its innermost dimension), but got rank 0}}
  %dx = fusion.rms_norm_grad %dy, %x, %r : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>
  return
}

// -----

// rms_norm_grad's grad has the shape of the input.
func.func @rms_norm_grad_grad_shape(%dy: tensor<4x16xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @below {{expected grad of shape [4, 8] (the shape of input), but got [4, 16]}}
  %dx = fusion.rms_norm_grad %dy, %x, %r
      : tensor<4x16xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// rms_norm_grad's rstd has one value per row.
func.func @rms_norm_grad_rstd_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<8xf32>) {
  // expected-error @below {{expected rstd of shape [4] (input without its innermost dimension), but got [8]}}
  %dx = fusion.rms_norm_grad %dy, %x, %r
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

// rms_norm_grad's weight has the innermost dimension of the input.
func.func @rms_norm_grad_weight_shape(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>,
                                      %r: tensor<4xf32>, %w: tensor<4xbf16>) {
  // expected-error @below {{expected weight of shape [8] (innermost dimension of input), but got [4]}}
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<4xbf16>)
      : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32> -> tensor<4x8xbf16>, tensor<4xf32>
  return
}

// -----

// rms_norm_grad's input_grad has the shape of the input.
func.func @rms_norm_grad_input_grad_shape(%dy: tensor<4x8xf16>, %x: tensor<4x8xf16>, %r: tensor<4xf32>) {
  // expected-error @below {{expected input_grad of shape [4, 8] (the shape of input), but got [8, 8]}}
  %dx = fusion.rms_norm_grad %dy, %x, %r
      : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4xf32> -> tensor<8x8xf16>
  return
}

// -----

// rms_norm_grad with a weight must return the weight gradient.
func.func @rms_norm_grad_missing_weight_grad(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                             %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @below {{expected a weight_grad result because weight is given}}
  %dx = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<8xf32>)
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// rms_norm_grad without a weight has no weight gradient.
func.func @rms_norm_grad_unexpected_weight_grad(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                                %r: tensor<4xf32>) {
  // expected-error @below {{expected no weight_grad result without weight}}
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// rms_norm_grad's weight_grad has the innermost dimension of the input.
func.func @rms_norm_grad_weight_grad_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                           %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @below {{expected weight_grad of shape [8] (innermost dimension of input), but got [4]}}
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<8xf32>)
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// layer_norm_grad rejects f64 data (ODS element-type constraint).
func.func @layer_norm_grad_f64(%dy: tensor<4x8xf32>, %x: tensor<4x8xf64>, %m: tensor<4xf32>,
                               %r: tensor<4xf32>) {
  // expected-error @below {{operand #1 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xf64>'}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<4x8xf32>, tensor<4x8xf64>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// layer_norm_grad requires f32 statistics (ODS element-type constraint).
func.func @layer_norm_grad_mean_bf16(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>,
                                     %m: tensor<4xbf16>, %r: tensor<4xf32>) {
  // expected-error @below {{operand #2 must be ranked tensor of 32-bit float values, but got 'tensor<4xbf16>'}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xbf16>, tensor<4xf32> -> tensor<4x8xbf16>
  return
}

// -----

// layer_norm_grad needs an input of rank >= 1.
func.func @layer_norm_grad_rank0(%dy: tensor<f16>, %x: tensor<f16>, %m: tensor<f32>, %r: tensor<f32>) {
  // expected-error @below {{'fusion.layer_norm_grad' op expected input of rank >= 1 (normalized over its innermost dimension), but got rank 0}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<f16>, tensor<f16>, tensor<f32>, tensor<f32> -> tensor<f16>
  return
}

// -----

// layer_norm_grad's grad has the shape of the input.
func.func @layer_norm_grad_grad_shape(%dy: tensor<8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>,
                                      %r: tensor<4xf32>) {
  // expected-error @below {{expected grad of shape [4, 8] (the shape of input), but got [8]}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// layer_norm_grad's mean has one value per row.
func.func @layer_norm_grad_mean_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<3xf32>,
                                      %r: tensor<4xf32>) {
  // expected-error @below {{expected mean of shape [4] (input without its innermost dimension), but got [3]}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<3xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// layer_norm_grad's rstd has one value per row.
func.func @layer_norm_grad_rstd_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>,
                                      %r: tensor<5xf32>) {
  // expected-error @below {{expected rstd of shape [4] (input without its innermost dimension), but got [5]}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<5xf32> -> tensor<4x8xf32>
  return
}

// -----

// layer_norm_grad's weight has the innermost dimension of the input.
func.func @layer_norm_grad_weight_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>,
                                        %r: tensor<4xf32>, %w: tensor<7xf32>) {
  // expected-error @below {{expected weight of shape [8] (innermost dimension of input), but got [7]}}
  %dx, %dw = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<7xf32>)
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// layer_norm_grad's input_grad has the shape of the input.
func.func @layer_norm_grad_input_grad_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                            %m: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @below {{expected input_grad of shape [4, 8] (the shape of input), but got [4, 8, 1]}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8x1xf32>
  return
}

// -----

// layer_norm_grad returns dweight with a weight and dbias with with_bias_grad:
// a weight without with_bias_grad calls for exactly one parameter gradient.
func.func @layer_norm_grad_param_grad_count(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                            %m: tensor<4xf32>, %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @below {{expected 1 parameter gradient result(s) (dweight with weight, dbias with with_bias_grad), but got 2}}
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<8xf32>)
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
      -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// layer_norm_grad's parameter gradients have the innermost dimension of the input.
func.func @layer_norm_grad_param_grad_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                            %m: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @below {{expected parameter gradient of shape [8] (innermost dimension of input), but got [4]}}
  %dx, %db = fusion.layer_norm_grad %dy, %x, %m, %r {with_bias_grad}
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// With a dynamic input, layer_norm_grad's grad fixes the shape input_grad
// must have.
func.func @layer_norm_grad_grad_input_grad_disagree(%dy: tensor<4x8xf32>, %x: tensor<?x?xf32>,
                                                    %m: tensor<?xf32>, %r: tensor<?xf32>) {
  // expected-error @below {{expected input_grad of shape [4, 8] (the shape of input; 4 from grad; 8 from grad), but got [4, 9]}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<4x8xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<4x9xf32>
  return
}

// -----

// rms_norm_grad's residual has the shape of the input gradient (the input's).
func.func @rms_norm_grad_residual_shape(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>,
                                        %r: tensor<4xf32>, %res: tensor<4x16xbf16>) {
  // expected-error @below {{expected residual of shape [4, 8] (the shape of input), but got [4, 16]}}
  %dx = fusion.rms_norm_grad %dy, %x, %r residual(%res : tensor<4x16xbf16>)
      : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32> -> tensor<4x8xbf16>
  return
}

// -----

// layer_norm_grad's residual has the shape of the input gradient: with a
// dynamic input, the one input_grad fixes (a broadcast is not allowed).
func.func @layer_norm_grad_residual_shape(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>,
                                          %m: tensor<?xf32>, %r: tensor<?xf32>,
                                          %res: tensor<1x8xf32>) {
  // expected-error @below {{expected residual of shape [4, 8] (the shape of input; 4 from input_grad), but got [1, 8]}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r residual(%res : tensor<1x8xf32>)
      : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<4x8xf32>
  return
}

// -----

// layer_norm_grad's residual is float data (ODS element-type constraint).
func.func @layer_norm_grad_residual_i32(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                                        %m: tensor<4xf32>, %r: tensor<4xf32>,
                                        %res: tensor<4x8xi32>) {
  // expected-error @below {{operand #4 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<4x8xi32>'}}
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r residual(%res : tensor<4x8xi32>)
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}
