// fusion.norm_attention on the CPU: hand values (float64), and the unfused
// composition layer_norm over the collapsed H * D dims -> gdpa -> add ->
// rms_norm over H * D -> add, dense and jagged, with and without weights,
// f32 and bf16.
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_dense --compare=fused_dense --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_dense_noweights --compare=fused_dense_noweights --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_jagged --compare=fused_jagged --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_bf16 --compare=fused_bf16 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: not fusion-runner %s -e unfused_dense --compare=fused_dense_no_ln_bias --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e unfused_jagged --compare=fused_jagged_no_ln_bias --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Hand values (float64, Inputs/hand_values.py norm_attention): B = 1, L = 2,
// H = 2, D = 2 (norms over 4 values); gelu_tanh, scale 0.5, ln_weight,
// ln_bias, rms_weight; then silu, scale 1, no weights.
func.func @expected() -> (tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
  %o = arith.constant dense<[[[[1.288320064, -0.1773781233], [0.145822973, -0.5571824682]], [[-1.392472869, 0.3751276791], [-0.8994538631, -3.116365628]]]]> : tensor<1x2x2x2xf32>
  %m = arith.constant dense<[[0.6875, -0.3125]]> : tensor<1x2xf32>
  %r = arith.constant dense<[[1.081173486, 1.043719232]]> : tensor<1x2xf32>
  %rr = arith.constant dense<[[0.5811831655, 0.7599225216]]> : tensor<1x2xf32>
  %o2 = arith.constant dense<[[[[0.7483426394, -1.211660347], [3.474103613, -0.8712480937]], [[-1.267695941, 0.9611523219], [1.645247636, -3.207094459]]]]> : tensor<1x2x2x2xf32>
  %rr2 = arith.constant dense<[[0.8569486629, 0.9695163107]]> : tensor<1x2xf32>
  return %o, %m, %r, %rr, %o2, %m, %r, %rr2 : tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
}
func.func @hand() -> (tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
  %q = arith.constant dense<[[[[1.0, -0.5], [2.0, 0.25]], [[-1.0, 0.5], [0.75, -1.5]]]]> : tensor<1x2x2x2xf32>
  %k = arith.constant dense<[[[[0.5, 1.0], [-1.0, 0.25]], [[1.0, -0.5], [0.5, 0.5]]]]> : tensor<1x2x2x2xf32>
  %v = arith.constant dense<[[[[1.0, -1.0], [0.5, 2.0]], [[-0.5, 0.25], [1.5, -1.0]]]]> : tensor<1x2x2x2xf32>
  %lnw = arith.constant dense<[1.5, -0.5, 2.0, 0.75]> : tensor<4xf32>
  %lnb = arith.constant dense<[0.1, 0.2, -0.3, 0.4]> : tensor<4xf32>
  %rmsw = arith.constant dense<[0.5, 1.25, -1.0, 2.0]> : tensor<4xf32>
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<4xf32>) ln_bias(%lnb : tensor<4xf32>) rms_weight(%rmsw : tensor<4xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
  %o2, %m2, %r2, %rr2 = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
  return %o, %m, %r, %rr, %o2, %m2, %r2, %rr2 : tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
}
// Dense, gelu, all three weights (the _no_ln_bias variant drops ln_bias).
func.func @unfused_dense(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %qf = tensor.cast %q : tensor<2x6x2x8xf32> to tensor<2x6x2x8xf32>
  %qc = tensor.collapse_shape %qf [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %ln, %m, %r = fusion.layer_norm %qc weight(%lnw : tensor<16xf32>) bias(%lnb : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<2x6x16xf32> -> tensor<2x6x16xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  %lnq = tensor.expand_shape %ln [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %a = fusion.gdpa %lnq, %k, %v {activation = #fusion.activation<gelu>, scale = 2.5e-01 : f32} : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>
  %h = fusion.add %a, %lnq : tensor<2x6x2x8xf32>
  %hc = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %n, %rr = fusion.rms_norm %hc weight(%rmsw : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<2x6x16xf32> -> tensor<2x6x16xf32>, tensor<2x6xf32>
  %ne = tensor.expand_shape %n [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %out = fusion.add %ne, %qf : tensor<2x6x2x8xf32>
  %outr = tensor.cast %out : tensor<2x6x2x8xf32> to tensor<2x6x2x8xf32>
  return %outr, %m, %r, %rr : tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
func.func @fused_dense(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  return %o, %m, %r, %rr : tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
func.func @fused_dense_no_ln_bias(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  return %o, %m, %r, %rr : tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
// Dense, no weights, silu.
func.func @unfused_dense_noweights(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %qf = tensor.cast %q : tensor<2x6x2x8xf32> to tensor<2x6x2x8xf32>
  %qc = tensor.collapse_shape %qf [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %ln, %m, %r = fusion.layer_norm %qc {epsilon = 1.0e-05 : f32} : tensor<2x6x16xf32> -> tensor<2x6x16xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  %lnq = tensor.expand_shape %ln [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %a = fusion.gdpa %lnq, %k, %v {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32} : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>
  %h = fusion.add %a, %lnq : tensor<2x6x2x8xf32>
  %hc = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %n, %rr = fusion.rms_norm %hc {epsilon = 1.0e-05 : f32} : tensor<2x6x16xf32> -> tensor<2x6x16xf32>, tensor<2x6xf32>
  %ne = tensor.expand_shape %n [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %out = fusion.add %ne, %qf : tensor<2x6x2x8xf32>
  %outr = tensor.cast %out : tensor<2x6x2x8xf32> to tensor<2x6x2x8xf32>
  return %outr, %m, %r, %rr : tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
func.func @fused_dense_noweights(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  return %o, %m, %r, %rr : tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
// Jagged, offsets [0, 5, 5, 12, 14] (uneven, an empty batch, two tail
// tokens: their attention is zero, so out = rms_norm(ln_q) + q there).
func.func @unfused_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %qf = tensor.cast %q : tensor<16x2x8xf32> to tensor<16x2x8xf32>
  %qc = tensor.collapse_shape %qf [[0], [1, 2]] : tensor<16x2x8xf32> into tensor<16x16xf32>
  %ln, %m, %r = fusion.layer_norm %qc weight(%lnw : tensor<16xf32>) bias(%lnb : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<16x16xf32> -> tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>
  %lnq = tensor.expand_shape %ln [[0], [1, 2]] output_shape [16, 2, 8] : tensor<16x16xf32> into tensor<16x2x8xf32>
  %a = fusion.gdpa %lnq, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32} : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>
  %h = fusion.add %a, %lnq : tensor<16x2x8xf32>
  %hc = tensor.collapse_shape %h [[0], [1, 2]] : tensor<16x2x8xf32> into tensor<16x16xf32>
  %n, %rr = fusion.rms_norm %hc weight(%rmsw : tensor<16xf32>) {epsilon = 1.0e-05 : f32} : tensor<16x16xf32> -> tensor<16x16xf32>, tensor<16xf32>
  %ne = tensor.expand_shape %n [[0], [1, 2]] output_shape [16, 2, 8] : tensor<16x16xf32> into tensor<16x2x8xf32>
  %out = fusion.add %ne, %qf : tensor<16x2x8xf32>
  %outr = tensor.cast %out : tensor<16x2x8xf32> to tensor<16x2x8xf32>
  return %outr, %m, %r, %rr : tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @fused_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<5xi32>) ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return %o, %m, %r, %rr : tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @fused_jagged_no_ln_bias(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<5xi32>) ln_weight(%lnw : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return %o, %m, %r, %rr : tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
// bf16 q, k, v, weights: everything in f32 inside the fused op; the
// composition is run in f32 on the extended q (k, v, weights stay bf16 and
// are extended inside the ops) and rounded once.
func.func @unfused_bf16(%q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>, %lnw: tensor<16xbf16>, %lnb: tensor<16xbf16>, %rmsw: tensor<16xbf16>) -> (tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %qf = arith.extf %q : tensor<2x6x2x8xbf16> to tensor<2x6x2x8xf32>
  %qc = tensor.collapse_shape %qf [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %ln, %m, %r = fusion.layer_norm %qc weight(%lnw : tensor<16xbf16>) bias(%lnb : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<2x6x16xf32> -> tensor<2x6x16xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  %lnq = tensor.expand_shape %ln [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %a = fusion.gdpa %lnq, %k, %v {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32} : tensor<2x6x2x8xf32>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16> -> tensor<2x6x2x8xf32>
  %h = fusion.add %a, %lnq : tensor<2x6x2x8xf32>
  %hc = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %n, %rr = fusion.rms_norm %hc weight(%rmsw : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<2x6x16xf32> -> tensor<2x6x16xf32>, tensor<2x6xf32>
  %ne = tensor.expand_shape %n [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %out = fusion.add %ne, %qf : tensor<2x6x2x8xf32>
  %outr = arith.truncf %out : tensor<2x6x2x8xf32> to tensor<2x6x2x8xbf16>
  return %outr, %m, %r, %rr : tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
func.func @fused_bf16(%q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>, %lnw: tensor<16xbf16>, %lnb: tensor<16xbf16>, %rmsw: tensor<16xbf16>) -> (tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<16xbf16>) ln_bias(%lnb : tensor<16xbf16>) rms_weight(%rmsw : tensor<16xbf16>)
      {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16> -> tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  return %o, %m, %r, %rr : tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}
func.func @fused_bf16_no_ln_bias(%q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>, %lnw: tensor<16xbf16>, %lnb: tensor<16xbf16>, %rmsw: tensor<16xbf16>) -> (tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<16xbf16>) rms_weight(%rmsw : tensor<16xbf16>)
      {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16> -> tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  return %o, %m, %r, %rr : tensor<2x6x2x8xbf16>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
}

