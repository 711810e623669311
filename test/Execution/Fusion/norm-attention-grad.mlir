// fusion.norm_attention_grad on the CPU: central finite differences of
// norm_attention precomputed in float64 (every input and weight), and the
// composition of L0 grads from the op description (ln_q recomputed from the
// saved statistics, rms_norm_grad, gdpa_grad, layer_norm_grad, + dout),
// dense and jagged.
// RUN: fusion-runner %s -e expected --compare=hand --atol=2e-5 --rtol=2e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_dense --compare=fused_dense --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_jagged --compare=fused_jagged --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: not fusion-runner %s -e unfused_dense --compare=fused_dense_no_skip --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e unfused_jagged --compare=fused_jagged_no_skip --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Central differences of sum(dout * norm_attention(...).out) in float64
// (Inputs/hand_values.py norm_attention_grad), same inputs as the hand case
// of norm-attention.mlir: gelu_tanh, scale 0.5, all weights (dq, dk, dv,
// dln_weight, dln_bias, drms_weight); then silu, scale 1, no weights.
func.func @expected() -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %dq = arith.constant dense<[[[[0.9976813556, -1.113660587], [0.7379971266, 0.1279821046]], [[-0.2050045492, 1.523875548], [1.302108971, -0.6209799698]]]]> : tensor<1x2x2x2xf32>
  %dk = arith.constant dense<[[[[0.3950000224, 0.4025401678], [0.1743853028, -0.06333449809]], [[-0.09119623157, -0.08684934849], [-0.1322987652, -0.008955166275]]]]> : tensor<1x2x2x2xf32>
  %dv = arith.constant dense<[[[[0.1962919625, -0.3492062143], [0.1133196526, 0.1579924709]], [[0.08358404591, -0.1277551257], [-0.1535021654, -0.175573607]]]]> : tensor<1x2x2x2xf32>
  %d1 = arith.constant dense<[0.5108246376, 0.635153637, -0.9305412731, 1.312572488]> : tensor<4xf32>
  %d2 = arith.constant dense<[-0.03438684637, 0.3670620258, -0.84209633, -0.9823531332]> : tensor<4xf32>
  %d3 = arith.constant dense<[0.4845564986, -0.3330208938, 5.153084753, 0.3031935986]> : tensor<4xf32>
  %dq2 = arith.constant dense<[[[[0.4453532068, -1.330754815], [0.8816724044, 0.7537292044]], [[-0.978360176, 0.01336136801], [2.816651098, 0.1483477092]]]]> : tensor<1x2x2x2xf32>
  %dk2 = arith.constant dense<[[[[0.2414381743, -0.3242252111], [-0.1629200943, 0.1073325606]], [[-0.1299907817, 0.4867124259], [0.3816414376, -0.5880416829]]]]> : tensor<1x2x2x2xf32>
  %dv2 = arith.constant dense<[[[[-0.1577495032, 0.2781521262], [-0.4328983652, -0.3901906842]], [[0.3857629736, -0.5236947], [0.04569610201, 0.1624003358]]]]> : tensor<1x2x2x2xf32>
  return %dq, %dk, %dv, %d1, %d2, %d3, %dq2, %dk2, %dv2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
func.func @hand() -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %q = arith.constant dense<[[[[1.0, -0.5], [2.0, 0.25]], [[-1.0, 0.5], [0.75, -1.5]]]]> : tensor<1x2x2x2xf32>
  %k = arith.constant dense<[[[[0.5, 1.0], [-1.0, 0.25]], [[1.0, -0.5], [0.5, 0.5]]]]> : tensor<1x2x2x2xf32>
  %v = arith.constant dense<[[[[1.0, -1.0], [0.5, 2.0]], [[-0.5, 0.25], [1.5, -1.0]]]]> : tensor<1x2x2x2xf32>
  %do = arith.constant dense<[[[[0.5, -1.0], [1.0, 0.25]], [[-0.25, 0.75], [2.0, -0.5]]]]> : tensor<1x2x2x2xf32>
  %lnw = arith.constant dense<[1.5, -0.5, 2.0, 0.75]> : tensor<4xf32>
  %lnb = arith.constant dense<[0.1, 0.2, -0.3, 0.4]> : tensor<4xf32>
  %rmsw = arith.constant dense<[0.5, 1.25, -1.0, 2.0]> : tensor<4xf32>
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<4xf32>) ln_bias(%lnb : tensor<4xf32>) rms_weight(%rmsw : tensor<4xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
  %dq, %dk, %dv, %d1, %d2, %d3 = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr ln_weight(%lnw : tensor<4xf32>) ln_bias(%lnb : tensor<4xf32>) rms_weight(%rmsw : tensor<4xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %o2, %m2, %r2, %rr2 = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
  %dq2, %dk2, %dv2 = fusion.norm_attention_grad %do, %q, %k, %v, %m2, %r2, %rr2
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  return %dq, %dk, %dv, %d1, %d2, %d3, %dq2, %dk2, %dv2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// Dense, gelu_tanh, scale 0.25, all weights.
#full = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
#col = affine_map<(d0, d1, d2) -> (d2)>
func.func @unfused_dense(%do: tensor<2x6x2x8xf32>, %q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  %qc = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  // ln_q recomputed from q and the saved statistics (linalg), then h.
  %e = tensor.empty() : tensor<2x6x16xf32>
  %lnc = linalg.generic {indexing_maps = [#full, #row, #row, #col, #col, #full], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%qc, %m, %r, %lnw, %lnb : tensor<2x6x16xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<2x6x16xf32>) {
  ^bb0(%x: f32, %mu: f32, %rs: f32, %g: f32, %b: f32, %out: f32):
    %c = arith.subf %x, %mu : f32
    %n = arith.mulf %c, %rs : f32
    %gn = arith.mulf %n, %g : f32
    %y = arith.addf %gn, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x6x16xf32>
  %lnq = tensor.expand_shape %lnc [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %a = fusion.gdpa %lnq, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32} : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>
  %h = fusion.add %a, %lnq : tensor<2x6x2x8xf32>
  %hc = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %doc = tensor.collapse_shape %do [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %dhc, %drms = fusion.rms_norm_grad %doc, %hc, %rr weight(%rmsw : tensor<16xf32>) : tensor<2x6x16xf32>, tensor<2x6x16xf32>, tensor<2x6xf32> -> tensor<2x6x16xf32>, tensor<16xf32>
  %dh = tensor.expand_shape %dhc [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %lnq, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32} : tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  %dl = fusion.add %dh, %dq1 : tensor<2x6x2x8xf32>
  %dlc = tensor.collapse_shape %dl [[0], [1], [2, 3]] : tensor<2x6x2x8xf32> into tensor<2x6x16xf32>
  %dxc, %dlnw, %dlnb = fusion.layer_norm_grad %dlc, %qc, %m, %r weight(%lnw : tensor<16xf32>) {with_bias_grad}
      : tensor<2x6x16xf32>, tensor<2x6x16xf32>, tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x6x16xf32>, tensor<16xf32>, tensor<16xf32>
  %dx = tensor.expand_shape %dxc [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %dq = fusion.add %dx, %do : tensor<2x6x2x8xf32>
  return %dq, %dk, %dv, %dlnw, %dlnb, %drms : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @fused_dense(%do: tensor<2x6x2x8xf32>, %q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x6x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>
  %dq, %dk, %dv, %d1, %d2, %d3 = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32} : tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return %dq, %dk, %dv, %d1, %d2, %d3 : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
// Negative: the skip-connection gradient dout must reach dq (here subtracted
// back out).
func.func @fused_dense_no_skip(%do: tensor<2x6x2x8xf32>, %q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dq0, %dk, %dv, %d1, %d2, %d3 = call @fused_dense(%do, %q, %k, %v, %lnw, %lnb, %rmsw) : (tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dq = arith.subf %dq0, %do : tensor<2x6x2x8xf32>
  return %dq, %dk, %dv, %d1, %d2, %d3 : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Jagged, silu, offsets [0, 5, 5, 12, 14] (an empty batch, two tail tokens).
#full2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
#col2 = affine_map<(d0, d1) -> (d1)>
func.func @unfused_jagged(%do: tensor<16x2x8xf32>, %q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<5xi32>) ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %qc = tensor.collapse_shape %q [[0], [1, 2]] : tensor<16x2x8xf32> into tensor<16x16xf32>
  // ln_q recomputed from q and the saved statistics (linalg), then h.
  %e = tensor.empty() : tensor<16x16xf32>
  %lnc = linalg.generic {indexing_maps = [#full2, #row2, #row2, #col2, #col2, #full2], iterator_types = ["parallel", "parallel"]}
      ins(%qc, %m, %r, %lnw, %lnb : tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%x: f32, %mu: f32, %rs: f32, %g: f32, %b: f32, %out: f32):
    %c = arith.subf %x, %mu : f32
    %n = arith.mulf %c, %rs : f32
    %gn = arith.mulf %n, %g : f32
    %y = arith.addf %gn, %b : f32
    linalg.yield %y : f32
  } -> tensor<16x16xf32>
  %lnq = tensor.expand_shape %lnc [[0], [1, 2]] output_shape [16, 2, 8] : tensor<16x16xf32> into tensor<16x2x8xf32>
  %a = fusion.gdpa %lnq, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32} : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>
  %h = fusion.add %a, %lnq : tensor<16x2x8xf32>
  %hc = tensor.collapse_shape %h [[0], [1, 2]] : tensor<16x2x8xf32> into tensor<16x16xf32>
  %doc = tensor.collapse_shape %do [[0], [1, 2]] : tensor<16x2x8xf32> into tensor<16x16xf32>
  %dhc, %drms = fusion.rms_norm_grad %doc, %hc, %rr weight(%rmsw : tensor<16xf32>) : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<16x16xf32>, tensor<16xf32>
  %dh = tensor.expand_shape %dhc [[0], [1, 2]] output_shape [16, 2, 8] : tensor<16x16xf32> into tensor<16x2x8xf32>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %lnq, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32} : tensor<16x2x8xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>
  %dl = fusion.add %dh, %dq1 : tensor<16x2x8xf32>
  %dlc = tensor.collapse_shape %dl [[0], [1, 2]] : tensor<16x2x8xf32> into tensor<16x16xf32>
  %dxc, %dlnw, %dlnb = fusion.layer_norm_grad %dlc, %qc, %m, %r weight(%lnw : tensor<16xf32>) {with_bias_grad}
      : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>
  %dx = tensor.expand_shape %dxc [[0], [1, 2]] output_shape [16, 2, 8] : tensor<16x16xf32> into tensor<16x2x8xf32>
  %dq = fusion.add %dx, %do : tensor<16x2x8xf32>
  return %dq, %dk, %dv, %dlnw, %dlnb, %drms : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @fused_jagged(%do: tensor<16x2x8xf32>, %q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<5xi32>) ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32> -> tensor<16x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %dq, %dk, %dv, %d1, %d2, %d3 = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr offsets(%off : tensor<5xi32>) ln_weight(%lnw : tensor<16xf32>) ln_bias(%lnb : tensor<16xf32>) rms_weight(%rmsw : tensor<16xf32>)
      {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32} : tensor<16x2x8xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return %dq, %dk, %dv, %d1, %d2, %d3 : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
// Negative: the skip-connection gradient dout must reach dq (here subtracted
// back out).
func.func @fused_jagged_no_skip(%do: tensor<16x2x8xf32>, %q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x8xf32>, %lnw: tensor<16xf32>, %lnb: tensor<16xf32>, %rmsw: tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dq0, %dk, %dv, %d1, %d2, %d3 = call @fused_jagged(%do, %q, %k, %v, %lnw, %lnb, %rmsw) : (tensor<16x2x8xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dq = arith.subf %dq0, %do : tensor<16x2x8xf32>
  return %dq, %dk, %dv, %d1, %d2, %d3 : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
