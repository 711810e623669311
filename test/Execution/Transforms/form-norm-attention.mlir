// fusion-form-norm-attention on the CPU: each program runs through the
// reference lowering before and after the pass, which must form
// fusion.norm_attention (and fusion.norm_attention_grad) without changing the
// results beyond the single f32 rounding of the fused ops.
// RUN: fusion-opt %s --fusion-form-norm-attention | FileCheck %s --check-prefix=FORMED
// RUN: fusion-runner %s -e fwd_f32 --after-passes=fusion-form-norm-attention --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e fwd_weights_f32 --after-passes=fusion-form-norm-attention --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e fwd_jagged_f32 --after-passes=fusion-form-norm-attention --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e fwd_jagged_block_bf16 --after-passes=fusion-form-norm-attention --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e fwd_bf16 --after-passes=fusion-form-norm-attention --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e fwd_saves_bf16 --after-passes=fusion-form-norm-attention --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e fwd_jagged_saves_bf16 --after-passes=fusion-form-norm-attention --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e fwd_bwd_f32 --after-passes=fusion-form-norm-attention --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e fwd_bwd_jagged_f32 --after-passes=fusion-form-norm-attention --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: not fusion-runner %s -e fwd_f32 --compare=fwd_f32_no_outer_residual --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Every program but the negative reference is formed, so the comparisons
// below do compare two different programs.
// FORMED-LABEL: func.func @fwd_f32
// FORMED: fusion.norm_attention
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_f32_no_outer_residual
// FORMED-NOT: fusion.norm_attention
// FORMED: fusion.gdpa
// FORMED-LABEL: func.func @fwd_weights_f32
// FORMED: fusion.norm_attention
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_jagged_block_bf16
// FORMED: fusion.norm_attention %{{.*}} offsets(%{{.*}} : tensor<6xi32>) ln_weight
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_jagged_saves_bf16
// FORMED: fusion.norm_attention {{.*}} offsets({{.*}} -> tensor<150x2x8xbf16>, tensor<150xf32>, tensor<150xf32>, tensor<150xf32>, tensor<150x2x8xbf16>, tensor<150x2x8xbf16>
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_jagged_f32
// FORMED: fusion.norm_attention
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_bf16
// FORMED: fusion.norm_attention
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_saves_bf16
// FORMED: fusion.norm_attention {{.*}} -> tensor<2x16x2x8xbf16>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16x2x8xbf16>, tensor<2x16x2x8xbf16>
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_bwd_f32
// FORMED: fusion.norm_attention
// FORMED: fusion.norm_attention_grad
// FORMED-NOT: fusion.gdpa
// FORMED-LABEL: func.func @fwd_bwd_jagged_f32
// FORMED: fusion.norm_attention
// FORMED: fusion.norm_attention_grad
// FORMED-NOT: fusion.gdpa

// Dense forward without weights, f32, and the statistics as results.
func.func @fwd_f32(%q: tensor<2x16x2x8xf32>, %k: tensor<2x4x2x8xf32>, %v: tensor<2x4x2x8xf32>)
    -> (tensor<2x16x2x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x16x2x8xf32> into tensor<2x16x16xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<2x16x16xf32> -> tensor<2x16x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xf32> into tensor<2x16x2x8xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.25 : f32} : tensor<2x16x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32> -> tensor<2x16x2x8xf32>
  %h = fusion.add %a, %ln : tensor<2x16x2x8xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x16x2x8xf32> into tensor<2x16x16xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<2x16x16xf32> -> tensor<2x16x16xf32>, tensor<2x16xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xf32> into tensor<2x16x2x8xf32>
  %out = fusion.add %y, %q : tensor<2x16x2x8xf32>
  return %out, %m, %r, %rr : tensor<2x16x2x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}
// Negative reference: without the outer residual the results differ.
func.func @fwd_f32_no_outer_residual(%q: tensor<2x16x2x8xf32>, %k: tensor<2x4x2x8xf32>, %v: tensor<2x4x2x8xf32>)
    -> (tensor<2x16x2x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x16x2x8xf32> into tensor<2x16x16xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<2x16x16xf32> -> tensor<2x16x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xf32> into tensor<2x16x2x8xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.25 : f32} : tensor<2x16x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32> -> tensor<2x16x2x8xf32>
  %h = fusion.add %a, %ln : tensor<2x16x2x8xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x16x2x8xf32> into tensor<2x16x16xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<2x16x16xf32> -> tensor<2x16x16xf32>, tensor<2x16xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xf32> into tensor<2x16x2x8xf32>
  return %y, %m, %r, %rr : tensor<2x16x2x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// Dense forward with ln_weight, ln_bias and rms_weight, swapped add operands.
func.func @fwd_weights_f32(%q: tensor<2x8x4x4xf32>, %k: tensor<2x6x4x4xf32>, %v: tensor<2x6x4x4xf32>,
    %lw: tensor<16xf32>, %lb: tensor<16xf32>, %rw: tensor<16xf32>) -> tensor<2x8x4x4xf32> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x8x4x4xf32> into tensor<2x8x16xf32>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lw : tensor<16xf32>) bias(%lb : tensor<16xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 8, 4, 4] : tensor<2x8x16xf32> into tensor<2x8x4x4xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<silu>, scale = 0.5 : f32} : tensor<2x8x4x4xf32>, tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32> -> tensor<2x8x4x4xf32>
  %h = fusion.add %ln, %a : tensor<2x8x4x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x8x4x4xf32> into tensor<2x8x16xf32>
  %yf = fusion.rms_norm %hf weight(%rw : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 8, 4, 4] : tensor<2x8x16xf32> into tensor<2x8x4x4xf32>
  %out = fusion.add %q, %y : tensor<2x8x4x4xf32>
  return %out : tensor<2x8x4x4xf32>
}

// The jagged block as bench/attention/gen_attention.py writes it
// (block_jagged_*: bf16, the three weights, gelu_tanh), random inputs:
// T = 150 tokens, offsets [0, 40, 40, 41, 130, 141] (an empty sequence, one
// of one token, a window of 128 shared by four sequences, 9 tokens past
// offsets[B]: out = rms_norm(ln_q) + q there), and the statistics.
func.func @fwd_jagged_block_bf16(%q: tensor<150x2x8xbf16>, %k: tensor<5x5x2x8xbf16>, %v: tensor<5x5x2x8xbf16>,
    %lnw: tensor<16xbf16>, %lnb: tensor<16xbf16>, %rmsw: tensor<16xbf16>)
    -> (tensor<150x2x8xbf16>, tensor<150xf32>, tensor<150xf32>, tensor<150xf32>) {
  %off = arith.constant dense<[0, 40, 40, 41, 130, 141]> : tensor<6xi32>
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<150x2x8xbf16> into tensor<150x16xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : tensor<16xbf16>) bias(%lnb : tensor<16xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<150x16xbf16> -> tensor<150x16xbf16>, tensor<150xf32>, tensor<150xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [150, 2, 8] : tensor<150x16xbf16> into tensor<150x2x8xbf16>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<6xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<150x2x8xbf16>, tensor<5x5x2x8xbf16>, tensor<5x5x2x8xbf16> -> tensor<150x2x8xbf16>
  %h = fusion.add %a, %ln : tensor<150x2x8xbf16>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<150x2x8xbf16> into tensor<150x16xbf16>
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<150x16xbf16> -> tensor<150x16xbf16>, tensor<150xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [150, 2, 8] : tensor<150x16xbf16> into tensor<150x2x8xbf16>
  %out = fusion.add %y, %q : tensor<150x2x8xbf16>
  return %out, %m, %r, %rr : tensor<150x2x8xbf16>, tensor<150xf32>, tensor<150xf32>, tensor<150xf32>
}

// The jagged block returning ln_q and h too (a training forward whose
// backward stays as its ops reads them): saved, with the tokens past
// offsets[B] (h = ln_q there) and an empty sequence.
func.func @fwd_jagged_saves_bf16(%q: tensor<150x2x8xbf16>, %k: tensor<5x5x2x8xbf16>, %v: tensor<5x5x2x8xbf16>,
    %lnw: tensor<16xbf16>, %lnb: tensor<16xbf16>, %rmsw: tensor<16xbf16>)
    -> (tensor<150x2x8xbf16>, tensor<150x2x8xbf16>, tensor<150x16xbf16>) {
  %off = arith.constant dense<[0, 40, 40, 41, 130, 141]> : tensor<6xi32>
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<150x2x8xbf16> into tensor<150x16xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : tensor<16xbf16>) bias(%lnb : tensor<16xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<150x16xbf16> -> tensor<150x16xbf16>, tensor<150xf32>, tensor<150xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [150, 2, 8] : tensor<150x16xbf16> into tensor<150x2x8xbf16>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<6xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<150x2x8xbf16>, tensor<5x5x2x8xbf16>, tensor<5x5x2x8xbf16> -> tensor<150x2x8xbf16>
  %h = fusion.add %a, %ln : tensor<150x2x8xbf16>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<150x2x8xbf16> into tensor<150x16xbf16>
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<150x16xbf16> -> tensor<150x16xbf16>, tensor<150xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [150, 2, 8] : tensor<150x16xbf16> into tensor<150x2x8xbf16>
  %out = fusion.add %y, %q : tensor<150x2x8xbf16>
  return %out, %ln, %hf : tensor<150x2x8xbf16>, tensor<150x2x8xbf16>, tensor<150x16xbf16>
}

// Jagged forward (T = 12 tokens, offsets [0, 5, 9]: tokens 9-11 belong to no
// batch), ln_weight only.
func.func @fwd_jagged_f32(%q: tensor<12x2x8xf32>, %k: tensor<2x4x2x8xf32>, %v: tensor<2x4x2x8xf32>,
    %lw: tensor<16xf32>) -> (tensor<12x2x8xf32>, tensor<12xf32>) {
  %off = arith.constant dense<[0, 5, 9]> : tensor<3xi32>
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<12x2x8xf32> into tensor<12x16xf32>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lw : tensor<16xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<12x16xf32> -> tensor<12x16xf32>, tensor<12xf32>, tensor<12xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [12, 2, 8] : tensor<12x16xf32> into tensor<12x2x8xf32>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<3xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<12x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32> -> tensor<12x2x8xf32>
  %h = fusion.add %a, %ln : tensor<12x2x8xf32>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<12x2x8xf32> into tensor<12x16xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<12x16xf32> -> tensor<12x16xf32>, tensor<12xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [12, 2, 8] : tensor<12x16xf32> into tensor<12x2x8xf32>
  %out = fusion.add %y, %q : tensor<12x2x8xf32>
  return %out, %rr : tensor<12x2x8xf32>, tensor<12xf32>
}

// Dense forward in bf16: the unfused chain rounds every intermediate to
// bf16, the fused op only its output.
func.func @fwd_bf16(%q: tensor<2x16x2x8xbf16>, %k: tensor<2x4x2x8xbf16>, %v: tensor<2x4x2x8xbf16>,
    %rw: tensor<16xbf16>) -> tensor<2x16x2x8xbf16> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x16x2x8xbf16> into tensor<2x16x16xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<2x16x16xbf16> -> tensor<2x16x16xbf16>, tensor<2x16xf32>, tensor<2x16xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xbf16> into tensor<2x16x2x8xbf16>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.25 : f32} : tensor<2x16x2x8xbf16>, tensor<2x4x2x8xbf16>, tensor<2x4x2x8xbf16> -> tensor<2x16x2x8xbf16>
  %h = fusion.add %a, %ln : tensor<2x16x2x8xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x16x2x8xbf16> into tensor<2x16x16xbf16>
  %yf = fusion.rms_norm %hf weight(%rw : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<2x16x16xbf16> -> tensor<2x16x16xbf16>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xbf16> into tensor<2x16x2x8xbf16>
  %out = fusion.add %y, %q : tensor<2x16x2x8xbf16>
  return %out : tensor<2x16x2x8xbf16>
}

// Dense forward, bf16, returning ln_q and h (collapsed) as well: the formed
// op saves them, rounded to bf16 once.
func.func @fwd_saves_bf16(%q: tensor<2x16x2x8xbf16>, %k: tensor<2x4x2x8xbf16>, %v: tensor<2x4x2x8xbf16>,
    %rw: tensor<16xbf16>) -> (tensor<2x16x2x8xbf16>, tensor<2x16x2x8xbf16>, tensor<2x16x16xbf16>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x16x2x8xbf16> into tensor<2x16x16xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<2x16x16xbf16> -> tensor<2x16x16xbf16>, tensor<2x16xf32>, tensor<2x16xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xbf16> into tensor<2x16x2x8xbf16>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.25 : f32} : tensor<2x16x2x8xbf16>, tensor<2x4x2x8xbf16>, tensor<2x4x2x8xbf16> -> tensor<2x16x2x8xbf16>
  %h = fusion.add %a, %ln : tensor<2x16x2x8xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x16x2x8xbf16> into tensor<2x16x16xbf16>
  %yf = fusion.rms_norm %hf weight(%rw : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<2x16x16xbf16> -> tensor<2x16x16xbf16>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xbf16> into tensor<2x16x2x8xbf16>
  %out = fusion.add %y, %q : tensor<2x16x2x8xbf16>
  return %out, %ln, %hf : tensor<2x16x2x8xbf16>, tensor<2x16x2x8xbf16>, tensor<2x16x16xbf16>
}

// Dense forward and backward with all three weights, f32: out, dq, dk, dv
// and the three parameter gradients.
func.func @fwd_bwd_f32(%q: tensor<2x8x2x8xf32>, %k: tensor<2x4x2x8xf32>, %v: tensor<2x4x2x8xf32>,
    %lw: tensor<16xf32>, %lb: tensor<16xf32>, %rw: tensor<16xf32>, %dout: tensor<2x8x2x8xf32>)
    -> (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>,
        tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<2x8x16xf32>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lw : tensor<16xf32>) bias(%lb : tensor<16xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32} : tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32> -> tensor<2x8x2x8xf32>
  %h = fusion.add %a, %ln : tensor<2x8x2x8xf32>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<2x8x16xf32>
  %yf, %rr = fusion.rms_norm %hf weight(%rw : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
  %out = fusion.add %y, %q : tensor<2x8x2x8xf32>

  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<2x8x16xf32>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rw : tensor<16xf32>)
      : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32> -> tensor<2x8x16xf32>, tensor<16xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.5 : f32}
      : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>
      -> tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>
  %dlnq = fusion.add %dh, %dq1 : tensor<2x8x2x8xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<2x8x16xf32>
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lw : tensor<16xf32>) {with_bias_grad}
      : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>
      -> tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
  %dq = fusion.add %dqln, %dout : tensor<2x8x2x8xf32>
  return %out, %dq, %dk, %dv, %dlw, %dlb, %drw
      : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>,
        tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Jagged forward and backward without weights (offsets [0, 3, 7], token 7
// in no batch), swapped residual operands in the backward.
func.func @fwd_bwd_jagged_f32(%q: tensor<8x2x4xf32>, %k: tensor<2x3x2x4xf32>, %v: tensor<2x3x2x4xf32>,
    %dout: tensor<8x2x4xf32>)
    -> (tensor<8x2x4xf32>, tensor<8x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>) {
  %off = arith.constant dense<[0, 3, 7]> : tensor<3xi64>
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<8x2x4xf32> into tensor<8x8xf32>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<8x8xf32> -> tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<3xi64>) {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<8x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32> -> tensor<8x2x4xf32>
  %h = fusion.add %a, %ln : tensor<8x2x4xf32>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<8x2x4xf32> into tensor<8x8xf32>
  %yf, %rr = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<8x8xf32> -> tensor<8x8xf32>, tensor<8xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
  %out = fusion.add %y, %q : tensor<8x2x4xf32>

  %doutf = tensor.collapse_shape %dout [[0], [1, 2]] : tensor<8x2x4xf32> into tensor<8x8xf32>
  %dhf = fusion.rms_norm_grad %doutf, %hf, %rr : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v offsets(%off : tensor<3xi64>) {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<8x2x4xf32>, tensor<8x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>
      -> tensor<8x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>
  %dlnq = fusion.add %dq1, %dh : tensor<8x2x4xf32>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1, 2]] : tensor<8x2x4xf32> into tensor<8x8xf32>
  %dqlnf = fusion.layer_norm_grad %dlnqf, %qf, %m, %r : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
  %dq = fusion.add %dout, %dqln : tensor<8x2x4xf32>
  return %out, %dq, %dk, %dv : tensor<8x2x4xf32>, tensor<8x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>
}
