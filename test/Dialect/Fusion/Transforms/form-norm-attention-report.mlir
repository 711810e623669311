// RUN: fusion-opt %s --fusion-form-norm-attention=report=true -verify-diagnostics -split-input-file | FileCheck %s

// The report option: one remark per fusion.gdpa, saying that it was formed
// or why not. Formed chains leave a fusion.norm_attention behind.

// The forward chain alone is formed.
// CHECK-LABEL: func.func @formed
// CHECK: fusion.norm_attention
// CHECK-NOT: fusion.gdpa
func.func @formed(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// A forward chain with its matching backward: both are formed.
// CHECK-LABEL: func.func @formed_with_backward
// CHECK: fusion.norm_attention
// CHECK: fusion.norm_attention_grad
// CHECK-NOT: fusion.gdpa
func.func @formed_with_backward(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention with its backward, fusion.norm_attention_grad}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// A gdpa whose query is not layer-normed is not considered further.
// CHECK-LABEL: func.func @plain_gdpa
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @plain_gdpa(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> tensor<1x8x2x4xf32> {
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: its query is not a fusion.layer_norm output expanded by a tensor.expand_shape}}
  %a = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  return %a : tensor<1x8x2x4xf32>
}

// -----

// A layer_norm over the head dimension D only.
// CHECK-LABEL: func.func @norm_over_d_only
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @norm_over_d_only(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %ln, %m, %r = fusion.layer_norm %q {epsilon = 1.0e-05 : f32} : tensor<1x8x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: the fusion.layer_norm feeding its query runs over D only; FlashNormAttention normalizes over all heads (H * D)}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %y = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<1x8x2x4xf32> -> tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// Norms over [B * L, H * D] rows: another reassociation.
// CHECK-LABEL: func.func @other_reassociation
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @other_reassociation(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0, 1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<8x8xf32> -> tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>
  %ln = tensor.expand_shape %lnf [[0, 1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: the tensor.collapse_shape before the fusion.layer_norm has reassociation [[0, 1], [2, 3]], expected [[0], [1], [2, 3]] (all heads of a token)}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0, 1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<8x8xf32> -> tensor<8x8xf32>
  %y = tensor.expand_shape %yf [[0, 1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// The inner residual sum is also returned: the forward saves it.
// CHECK-LABEL: func.func @intermediate_used_elsewhere
// CHECK: fusion.norm_attention
// CHECK-NOT: fusion.gdpa
func.func @intermediate_used_elsewhere(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for their readers outside the block}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out, %h : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The attention output before the inner residual is also returned: it is
// not one of the intermediates the fused op can save.
// CHECK-LABEL: func.func @attention_used_elsewhere
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @attention_used_elsewhere(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: the fusion.gdpa output has users outside the chain}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out, %a : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The outer residual adds ln_q instead of q.
// CHECK-LABEL: func.func @outer_residual_not_q
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @outer_residual_not_q(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: the outer residual adds something other than the query}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %ln : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// The gdpa already adds ln_q (its residual, as fusion-plan-kernels folds the
// inner residual's add): nothing is formed.
// CHECK-LABEL: func.func @inner_residual_folded
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @inner_residual_folded(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: it already adds a residual to its output (the block's inner residual is a fusion.add of its output and its query)}}
  %h = fusion.gdpa %ln, %k, %v residual(%ln : tensor<1x8x2x4xf32>) {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// The layer_norm rounds a bf16 query to f32: the chain changes element type.
// CHECK-LABEL: func.func @element_type_change
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @element_type_change(%q: tensor<1x8x2x4xbf16>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> (tensor<1x8x2x4xbf16>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xbf16> into tensor<1x8x8xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xbf16> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: the fusion.layer_norm output has element type f32, but the query has bf16}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xbf16>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xbf16> into tensor<1x8x2x4xbf16>
  %out = fusion.add %y, %q : tensor<1x8x2x4xbf16>
  return %out : tensor<1x8x2x4xbf16>
}

// -----

// The backward's gdpa_grad has another scale: the forward alone is formed, saving the ln_q and h it reads.
// CHECK-LABEL: func.func @backward_other_scale
// CHECK: fusion.norm_attention
// CHECK-NOT: fusion.gdpa %
// CHECK: fusion.gdpa_grad
func.func @backward_other_scale(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for its backward, which does not match (the fusion.gdpa_grad has another activation or scale than the fusion.gdpa) and runs as its ops}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The backward's gdpa_grad has another scale, and the attention output is
// returned too: nothing is formed.
// CHECK-LABEL: func.func @backward_other_scale_and_attention_used
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @backward_other_scale_and_attention_used(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: its backward does not match (the fusion.gdpa_grad has another activation or scale than the fusion.gdpa), and the fusion.gdpa output has users outside the chain}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq, %a : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The backward's gdpa_grad already adds dh (its residual, as fusion-plan-kernels folds it): the forward alone is formed, saving the ln_q and h it reads.
// CHECK-LABEL: func.func @backward_residual_folded
// CHECK: fusion.norm_attention
// CHECK-NOT: fusion.gdpa %
// CHECK: fusion.gdpa_grad
func.func @backward_residual_folded(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for its backward, which does not match (the fusion.gdpa_grad already adds a residual to its query gradient) and runs as its ops}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dlnq, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v residual(%dh : tensor<1x8x2x4xf32>) {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The backward's layer_norm_grad computes a bias gradient the bias-free forward has no operand for.
// CHECK-LABEL: func.func @backward_bias_grad_without_bias
// CHECK: fusion.norm_attention
// CHECK-NOT: fusion.gdpa %
// CHECK: fusion.gdpa_grad
func.func @backward_bias_grad_without_bias(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for its backward, which does not match (the fusion.layer_norm_grad computes a bias gradient, but the fusion.layer_norm has no bias) and runs as its ops}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r {with_bias_grad} : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>, tensor<8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The backward's layer_norm_grad already adds the outer residual (the form
// fusion-plan-kernels gives it): the norm_attention_grad has no such operand.
// CHECK-LABEL: func.func @backward_grad_with_residual
// CHECK: fusion.norm_attention
// CHECK-NOT: fusion.gdpa %
// CHECK: fusion.gdpa_grad
func.func @backward_grad_with_residual(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for its backward, which does not match (the fusion.layer_norm_grad adds a residual gradient) and runs as its ops}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r residual(%doutf : tensor<1x8x8xf32>) : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dq = tensor.expand_shape %dqf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  return %out, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// The rms_norm weight is computed after a use of the LayerNorm mean, where
// the fused op would have to go: nothing is formed.
// CHECK-LABEL: func.func @operand_after_stat_user
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @operand_after_stat_user(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>, %w: tensor<8xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %s = arith.negf %m : tensor<1x8xf32>
  %rw = arith.negf %w : tensor<8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: an operand of the fusion.norm_attention is defined after a use of the chain's results}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf weight(%rw : tensor<8xf32>) {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out, %s : tensor<1x8x2x4xf32>, tensor<1x8xf32>
}

// -----

// A dynamic head size D: the reshapes cannot be proven to restore the
// query's layout, so nothing is formed.
// CHECK-LABEL: func.func @dynamic_head_size
// CHECK-NOT: fusion.norm_attention
// CHECK: fusion.gdpa
func.func @dynamic_head_size(%q: tensor<1x8x2x?xf32>, %k: tensor<1x4x2x?xf32>, %v: tensor<1x4x2x?xf32>, %d: index) -> tensor<1x8x2x?xf32> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x?xf32> into tensor<1x8x?xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x?xf32> -> tensor<1x8x?xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, %d] : tensor<1x8x?xf32> into tensor<1x8x2x?xf32>
  // expected-remark @below {{fusion.gdpa not formed into fusion.norm_attention: the query tensor<1x8x2x?xf32> has a dynamic head count or head size}}
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x?xf32>, tensor<1x4x2x?xf32>, tensor<1x4x2x?xf32> -> tensor<1x8x2x?xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x?xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x?xf32> into tensor<1x8x?xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x?xf32> -> tensor<1x8x?xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, %d] : tensor<1x8x?xf32> into tensor<1x8x2x?xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x?xf32>
  return %out : tensor<1x8x2x?xf32>
}
