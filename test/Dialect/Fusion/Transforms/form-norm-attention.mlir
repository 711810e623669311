// RUN: fusion-opt %s --fusion-form-norm-attention -split-input-file | FileCheck %s

// Dense chain without weights: one fusion.norm_attention, every op of the
// chain gone.
// CHECK-LABEL: func.func @dense_plain
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x8x2x4xf32>, %[[K:[^:]*]]: tensor<1x4x2x4xf32>, %[[V:[^:]*]]: tensor<1x4x2x4xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[OUT:[^,]*]], %{{.*}} = fusion.norm_attention %[[Q]], %[[K]], %[[V]]
// CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, ln_epsilon = 9.99999974E-6 : f32, rms_epsilon = 5.000000e-01 : f32, scale = 2.500000e-01 : f32}
// CHECK-SAME: : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
// CHECK-SAME: -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
// CHECK-NOT: fusion.layer_norm
// CHECK-NOT: fusion.gdpa
// CHECK-NOT: fusion.add
// CHECK-NOT: fusion.rms_norm
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[OUT]]
func.func @dense_plain(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.25 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 0.5 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// All three weights, both residual adds with swapped operands, bf16, and the
// statistics of both norms returned: they become the fused op's results.
// CHECK-LABEL: func.func @dense_weights_swapped_stats
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x8x2x4xbf16>, %[[K:[^:]*]]: tensor<1x4x2x4xbf16>, %[[V:[^:]*]]: tensor<1x4x2x4xbf16>, %[[LW:[^:]*]]: tensor<8xbf16>, %[[LB:[^:]*]]: tensor<8xbf16>, %[[RW:[^:]*]]: tensor<8xf32>)
// CHECK: %[[OUT:[^,]*]], %[[M:[^,]*]], %[[R:[^,]*]], %[[RR:[^ ]*]] = fusion.norm_attention %[[Q]], %[[K]], %[[V]] ln_weight(%[[LW]] : tensor<8xbf16>) ln_bias(%[[LB]] : tensor<8xbf16>) rms_weight(%[[RW]] : tensor<8xf32>)
// CHECK-SAME: activation = #fusion.activation<silu>
// CHECK-SAME: ln_epsilon = 1.250000e-01 : f32, rms_epsilon = 2.500000e-01 : f32, scale = 1.000000e+00 : f32
// CHECK-NOT: fusion.add
// CHECK: return %[[OUT]], %[[M]], %[[R]], %[[RR]]
func.func @dense_weights_swapped_stats(%q: tensor<1x8x2x4xbf16>, %k: tensor<1x4x2x4xbf16>, %v: tensor<1x4x2x4xbf16>,
    %lw: tensor<8xbf16>, %lb: tensor<8xbf16>, %rw: tensor<8xf32>)
    -> (tensor<1x8x2x4xbf16>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xbf16> into tensor<1x8x8xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lw : tensor<8xbf16>) bias(%lb : tensor<8xbf16>) {epsilon = 0.125 : f32}
      : tensor<1x8x8xbf16> -> tensor<1x8x8xbf16>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xbf16> into tensor<1x8x2x4xbf16>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<silu>, scale = 1.0 : f32} : tensor<1x8x2x4xbf16>, tensor<1x4x2x4xbf16>, tensor<1x4x2x4xbf16> -> tensor<1x8x2x4xbf16>
  %h = fusion.add %ln, %a : tensor<1x8x2x4xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xbf16> into tensor<1x8x8xbf16>
  %yf, %rr = fusion.rms_norm %hf weight(%rw : tensor<8xf32>) {epsilon = 0.25 : f32} : tensor<1x8x8xbf16> -> tensor<1x8x8xbf16>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xbf16> into tensor<1x8x2x4xbf16>
  %out = fusion.add %q, %y : tensor<1x8x2x4xbf16>
  return %out, %m, %r, %rr : tensor<1x8x2x4xbf16>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
}

// -----

// Only an ln_bias; the LayerNorm rstd is used by an op before the outer
// residual, so the fused op is placed before that user.
// CHECK-LABEL: func.func @dense_ln_bias_early_stat_user
// CHECK-SAME: %[[LB:[^:]*]]: tensor<8xf32>)
// CHECK: %[[OUT:[^,]*]], %{{[^,]*}}, %[[R:[^,]*]], %{{[^ ]*}} = fusion.norm_attention
// CHECK-SAME: ln_bias(%[[LB]] : tensor<8xf32>) {
// CHECK: %[[S:.*]] = arith.negf %[[R]]
// CHECK-NOT: fusion.rms_norm
// CHECK: return %[[OUT]], %[[S]]
func.func @dense_ln_bias_early_stat_user(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>,
    %lb: tensor<8xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf bias(%lb : tensor<8xf32>) {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %s = arith.negf %r : tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out, %s : tensor<1x8x2x4xf32>, tensor<1x8xf32>
}

// -----

// Jagged query [T, H, D] with i64 offsets and only an rms_weight; the
// RMSNorm rstd is returned.
// CHECK-LABEL: func.func @jagged_rms_weight
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<12x2x4xf32>, %[[K:[^:]*]]: tensor<2x4x2x4xf32>, %[[V:[^:]*]]: tensor<2x4x2x4xf32>, %[[OFF:[^:]*]]: tensor<3xi64>, %[[RW:[^:]*]]: tensor<8xf32>)
// CHECK: %[[OUT:[^,]*]], %{{[^,]*}}, %{{[^,]*}}, %[[RR:[^ ]*]] = fusion.norm_attention %[[Q]], %[[K]], %[[V]] offsets(%[[OFF]] : tensor<3xi64>) rms_weight(%[[RW]] : tensor<8xf32>)
// CHECK-SAME: -> tensor<12x2x4xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[OUT]], %[[RR]]
func.func @jagged_rms_weight(%q: tensor<12x2x4xf32>, %k: tensor<2x4x2x4xf32>, %v: tensor<2x4x2x4xf32>,
    %off: tensor<3xi64>, %rw: tensor<8xf32>) -> (tensor<12x2x4xf32>, tensor<12xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<12x8xf32> -> tensor<12x8xf32>, tensor<12xf32>, tensor<12xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [12, 2, 4] : tensor<12x8xf32> into tensor<12x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<3xi64>) {activation = #fusion.activation<gelu>, scale = 1.0 : f32}
      : tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<12x2x4xf32>
  %h = fusion.add %a, %ln : tensor<12x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %yf, %rr = fusion.rms_norm %hf weight(%rw : tensor<8xf32>) {epsilon = 1.0e-05 : f32} : tensor<12x8xf32> -> tensor<12x8xf32>, tensor<12xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [12, 2, 4] : tensor<12x8xf32> into tensor<12x2x4xf32>
  %out = fusion.add %y, %q : tensor<12x2x4xf32>
  return %out, %rr : tensor<12x2x4xf32>, tensor<12xf32>
}

// -----

// Dynamic batch and sequence length (static H and D): formed, statistics
// [?, ?].
// CHECK-LABEL: func.func @dense_dynamic_tokens
// CHECK: fusion.norm_attention
// CHECK-SAME: -> tensor<?x?x2x4xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
// CHECK-NOT: fusion.gdpa
func.func @dense_dynamic_tokens(%q: tensor<?x?x2x4xf32>, %k: tensor<?x4x2x4xf32>, %v: tensor<?x4x2x4xf32>,
    %b: index, %l: index) -> tensor<?x?x2x4xf32> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<?x?x2x4xf32> into tensor<?x?x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [%b, %l, 2, 4] : tensor<?x?x8xf32> into tensor<?x?x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu>, scale = 1.0 : f32} : tensor<?x?x2x4xf32>, tensor<?x4x2x4xf32>, tensor<?x4x2x4xf32> -> tensor<?x?x2x4xf32>
  %h = fusion.add %a, %ln : tensor<?x?x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<?x?x2x4xf32> into tensor<?x?x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [%b, %l, 2, 4] : tensor<?x?x8xf32> into tensor<?x?x2x4xf32>
  %out = fusion.add %y, %q : tensor<?x?x2x4xf32>
  return %out : tensor<?x?x2x4xf32>
}

// -----

// Forward and backward with all three weights and with_bias_grad: both
// become fused ops; the backward reads the forward's statistics, and the
// parameter gradients come in the order d ln_weight, d ln_bias, d rms_weight.
// CHECK-LABEL: func.func @fwd_bwd_weights
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x8x2x4xf32>, %[[K:[^:]*]]: tensor<1x4x2x4xf32>, %[[V:[^:]*]]: tensor<1x4x2x4xf32>, %[[LW:[^:]*]]: tensor<8xf32>, %[[LB:[^:]*]]: tensor<8xf32>, %[[RW:[^:]*]]: tensor<8xf32>, %[[DOUT:[^:]*]]: tensor<1x8x2x4xf32>)
// CHECK: %[[OUT:[^,]*]], %[[M:[^,]*]], %[[R:[^,]*]], %[[RR:[^ ]*]] = fusion.norm_attention %[[Q]], %[[K]], %[[V]] ln_weight(%[[LW]] : tensor<8xf32>) ln_bias(%[[LB]] : tensor<8xf32>) rms_weight(%[[RW]] : tensor<8xf32>)
// CHECK: %[[DQ:[^,]*]], %[[DK:[^,]*]], %[[DV:[^,]*]], %[[PG:[^ ]*]]:3 = fusion.norm_attention_grad %[[DOUT]], %[[Q]], %[[K]], %[[V]], %[[M]], %[[R]], %[[RR]] ln_weight(%[[LW]] : tensor<8xf32>) ln_bias(%[[LB]] : tensor<8xf32>) rms_weight(%[[RW]] : tensor<8xf32>)
// CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, scale = 5.000000e-01 : f32}
// CHECK-SAME: -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NOT: fusion.rms_norm_grad
// CHECK-NOT: fusion.gdpa_grad
// CHECK-NOT: fusion.layer_norm_grad
// CHECK-NOT: fusion.add
// CHECK: return %[[OUT]], %[[DQ]], %[[DK]], %[[DV]], %[[PG]]#0, %[[PG]]#1, %[[PG]]#2
func.func @fwd_bwd_weights(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>,
    %lw: tensor<8xf32>, %lb: tensor<8xf32>, %rw: tensor<8xf32>, %dout: tensor<1x8x2x4xf32>)
    -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lw : tensor<8xf32>) bias(%lb : tensor<8xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf weight(%rw : tensor<8xf32>) {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rw : tensor<8xf32>)
      : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>, tensor<8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lw : tensor<8xf32>) {with_bias_grad}
      : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>, tensor<8xf32>, tensor<8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq, %dk, %dv, %dlw, %dlb, %drw
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Jagged forward and backward without weights; the backward collapses q and
// h itself, and its residual adds have swapped operands.
// CHECK-LABEL: func.func @fwd_bwd_jagged_own_collapses
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<12x2x4xf32>, %[[K:[^:]*]]: tensor<2x4x2x4xf32>, %[[V:[^:]*]]: tensor<2x4x2x4xf32>, %[[OFF:[^:]*]]: tensor<3xi32>, %[[DOUT:[^:]*]]: tensor<12x2x4xf32>)
// CHECK: %[[OUT:[^,]*]], %[[M:[^,]*]], %[[R:[^,]*]], %[[RR:[^ ]*]] = fusion.norm_attention %[[Q]], %[[K]], %[[V]] offsets(%[[OFF]] : tensor<3xi32>) {
// CHECK: %[[DQ:[^,]*]], %[[DK:[^,]*]], %[[DV:[^ ]*]] = fusion.norm_attention_grad %[[DOUT]], %[[Q]], %[[K]], %[[V]], %[[M]], %[[R]], %[[RR]] offsets(%[[OFF]] : tensor<3xi32>) {
// CHECK-SAME: -> tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>{{$}}
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[OUT]], %[[DQ]], %[[DK]], %[[DV]]
func.func @fwd_bwd_jagged_own_collapses(%q: tensor<12x2x4xf32>, %k: tensor<2x4x2x4xf32>, %v: tensor<2x4x2x4xf32>,
    %off: tensor<3xi32>, %dout: tensor<12x2x4xf32>)
    -> (tensor<12x2x4xf32>, tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<12x8xf32> -> tensor<12x8xf32>, tensor<12xf32>, tensor<12xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [12, 2, 4] : tensor<12x8xf32> into tensor<12x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<3xi32>) {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<12x2x4xf32>
  %h = fusion.add %a, %ln : tensor<12x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<12x8xf32> -> tensor<12x8xf32>, tensor<12xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [12, 2, 4] : tensor<12x8xf32> into tensor<12x2x4xf32>
  %out = fusion.add %y, %q : tensor<12x2x4xf32>
  %doutf = tensor.collapse_shape %dout [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %hf2 = tensor.collapse_shape %h [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf2, %rr : tensor<12x8xf32>, tensor<12x8xf32>, tensor<12xf32> -> tensor<12x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1, 2]] output_shape [12, 2, 4] : tensor<12x8xf32> into tensor<12x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v offsets(%off : tensor<3xi32>) {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<12x2x4xf32>, tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>
      -> tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>
  %dlnq = fusion.add %dq1, %dh : tensor<12x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %qf2 = tensor.collapse_shape %q [[0], [1, 2]] : tensor<12x2x4xf32> into tensor<12x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf2, %m, %r : tensor<12x8xf32>, tensor<12x8xf32>, tensor<12xf32>, tensor<12xf32> -> tensor<12x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1, 2]] output_shape [12, 2, 4] : tensor<12x8xf32> into tensor<12x2x4xf32>
  %dq = fusion.add %dout, %dqln : tensor<12x2x4xf32>
  return %out, %dq, %dk, %dv : tensor<12x2x4xf32>, tensor<12x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>
}

// -----

// The forward has an ln_bias but the layer_norm_grad computes no bias
// gradient: norm_attention_grad takes the bias and its d ln_bias result
// stays unused; d rms_weight is the second parameter gradient. Regression:
// the output gradient is the forward's output itself, which the backward must
// read from the fused forward op.
// CHECK-LABEL: func.func @fwd_bwd_unused_bias_grad
// CHECK: %[[OUT:[^,]*]], %{{.*}} = fusion.norm_attention
// CHECK: %[[DQ:[^,]*]], %{{[^,]*}}, %{{[^,]*}}, %[[PG:[^ ]*]]:2 = fusion.norm_attention_grad %[[OUT]],
// CHECK-SAME: ln_bias(%{{.*}} : tensor<8xf32>) rms_weight(%{{.*}} : tensor<8xf32>)
// CHECK: return %[[DQ]], %[[PG]]#1
func.func @fwd_bwd_unused_bias_grad(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>,
    %lb: tensor<8xf32>, %rw: tensor<8xf32>, %dout: tensor<1x8x2x4xf32>)
    -> (tensor<1x8x2x4xf32>, tensor<8xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf bias(%lb : tensor<8xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<relu>, scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf, %rr = fusion.rms_norm %hf weight(%rw : tensor<8xf32>) {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  %doutf = tensor.collapse_shape %out [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rw : tensor<8xf32>)
      : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>, tensor<8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<relu>, scale = 0.5 : f32}
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %out : tensor<1x8x2x4xf32>
  return %dq, %drw : tensor<1x8x2x4xf32>, tensor<8xf32>
}

// -----

// The inner residual sum h is also returned: the forward is formed and
// saves ln_q and h (two more results); the function returns the saved h.
// CHECK-LABEL: func.func @intermediate_used_elsewhere
// CHECK: %[[OUT:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SAVED:.*]]:2 = fusion.norm_attention
// CHECK-SAME: -> tensor<1x8x2x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
// CHECK-NOT: fusion.gdpa
// CHECK-NOT: fusion.layer_norm
// CHECK: return %[[OUT]], %[[SAVED]]#1
func.func @intermediate_used_elsewhere(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>)
    -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out, %h : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// Does not apply: the norms run over [B * L, H * D] (reassociation
// [[0, 1], [2, 3]]), not per [B, L] token row; the IR is unchanged.
// CHECK-LABEL: func.func @other_reassociation
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2, 3]]
// CHECK: fusion.layer_norm
// CHECK: fusion.gdpa
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.norm_attention
func.func @other_reassociation(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %qf = tensor.collapse_shape %q [[0, 1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<8x8xf32> -> tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>
  %ln = tensor.expand_shape %lnf [[0, 1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0, 1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<8x8xf32> -> tensor<8x8xf32>
  %y = tensor.expand_shape %yf [[0, 1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// Does not apply: both norms run over the head dimension D only (no
// reshape), which is not FlashNormAttention; the IR is unchanged.
// CHECK-LABEL: func.func @norm_over_d_only
// CHECK: fusion.layer_norm %{{.*}} : tensor<1x8x2x4xf32>
// CHECK: fusion.gdpa
// CHECK: fusion.rms_norm %{{.*}} : tensor<1x8x2x4xf32>
// CHECK-NOT: fusion.norm_attention
func.func @norm_over_d_only(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %ln, %m, %r = fusion.layer_norm %q {epsilon = 1.0e-05 : f32} : tensor<1x8x2x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %y = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<1x8x2x4xf32> -> tensor<1x8x2x4xf32>
  %out = fusion.add %y, %q : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// Does not apply: the outer residual adds the layer-normed query instead of
// q; the IR is unchanged.
// CHECK-LABEL: func.func @outer_residual_not_q
// CHECK: %[[LN:.*]] = tensor.expand_shape
// CHECK: fusion.gdpa %[[LN]]
// CHECK: %[[Y:.*]] = tensor.expand_shape
// CHECK: %[[OUT:.*]] = fusion.add %[[Y]], %[[LN]]
// CHECK: return %[[OUT]]
// CHECK-NOT: fusion.norm_attention
func.func @outer_residual_not_q(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<1x8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %out = fusion.add %y, %ln : tensor<1x8x2x4xf32>
  return %out : tensor<1x8x2x4xf32>
}

// -----

// The backward's gdpa_grad uses another scale than the forward's gdpa, so
// the backward is not formed; it reads ln_q and h, which the formed forward
// saves for it (and the statistics, which it returns anyway).
// CHECK-LABEL: func.func @backward_mismatch
// CHECK: %{{.*}}, %[[M:.*]], %[[R:.*]], %[[RR:.*]], %[[SAVED:.*]]:2 = fusion.norm_attention
// CHECK-NOT: fusion.gdpa %
// CHECK: %[[HF:.*]] = tensor.collapse_shape %[[SAVED]]#1
// CHECK: fusion.rms_norm_grad %{{.*}}, %[[HF]], %[[RR]]
// CHECK: fusion.gdpa_grad %{{.*}}, %[[SAVED]]#0,
// CHECK: fusion.layer_norm_grad %{{.*}}, %{{.*}}, %[[M]], %[[R]]
// CHECK-NOT: fusion.norm_attention_grad
func.func @backward_mismatch(%q: tensor<1x8x2x4xf32>, %k: tensor<1x4x2x4xf32>, %v: tensor<1x4x2x4xf32>,
    %dout: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
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
      : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
      -> tensor<1x8x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<1x8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<1x8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<1x8x8xf32> into tensor<1x8x2x4xf32>
  %dq = fusion.add %dqln, %dout : tensor<1x8x2x4xf32>
  return %out, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}
