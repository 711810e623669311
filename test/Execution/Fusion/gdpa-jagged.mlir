// fusion.gdpa with jagged q (offsets) on the CPU: hand values, the dense
// layout, and per-batch slices through dense gdpa, including an uneven split,
// an empty batch and tokens past offsets[B] (whose output must be zero).
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e dense --compare=jagged_even --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e per_batch --compare=jagged_uneven --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e per_batch --compare=jagged_uneven_i64 --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e jagged_uneven_f32_rounded --compare=jagged_uneven_bf16 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: not fusion-runner %s -e per_batch --compare=jagged_no_tail --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e per_batch --compare=jagged_shifted --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Hand values (float64, Inputs/hand_values.py gdpa_jagged): T = 5, B = 3,
// offsets [0, 3, 3, 4]: batch 0 owns tokens 0-2, batch 1 none, batch 2
// token 3, token 4 no batch (zero). H = 1, D = 2, Dv = 3, Lkv = 2, silu,
// scale 0.75. Both i32 and i64 offsets.
func.func @expected() -> (tensor<5x1x3xf32>, tensor<5x1x3xf32>) {
  %o = arith.constant dense<[[[-0.1319088785, 0.1319088785, -0.3957266354]], [[0.5475026195, 1.222485134, -0.7174758125]], [[0.06329321735, -0.5215432924, 0.8008797521]], [[-1.173832268, 0.4807193825, -0.07827729105]], [[0.0, 0.0, 0.0]]]> : tensor<5x1x3xf32>
  return %o, %o : tensor<5x1x3xf32>, tensor<5x1x3xf32>
}
func.func @hand() -> (tensor<5x1x3xf32>, tensor<5x1x3xf32>) {
  %q = arith.constant dense<[[[0.5, -1.0]], [[1.0, 0.25]], [[-0.75, 0.5]], [[2.0, -1.5]], [[1.0, 1.0]]]> : tensor<5x1x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.5]], [[-0.5, 1.0]]], [[[0.25, -1.0]], [[1.5, 0.5]]], [[[-1.5, 0.75]], [[0.5, -0.25]]]]> : tensor<3x2x1x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0, -1.0]], [[0.5, -0.5, 1.5]]], [[[-2.0, 0.5, 1.0]], [[1.0, 1.0, -1.0]]], [[[0.25, -0.75, 2.0]], [[-1.5, 0.5, 0.25]]]]> : tensor<3x2x1x3xf32>
  %off = arith.constant dense<[0, 3, 3, 4]> : tensor<4xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<4xi32>) {activation = #fusion.activation<silu>, scale = 7.5e-01 : f32}
      : tensor<5x1x2xf32>, tensor<3x2x1x2xf32>, tensor<3x2x1x3xf32> -> tensor<5x1x3xf32>
  %off64 = arith.constant dense<[0, 3, 3, 4]> : tensor<4xi64>
  %o64 = fusion.gdpa %q, %k, %v offsets(%off64 : tensor<4xi64>) {activation = #fusion.activation<silu>, scale = 7.5e-01 : f32}
      : tensor<5x1x2xf32>, tensor<3x2x1x2xf32>, tensor<3x2x1x3xf32> -> tensor<5x1x3xf32>
  return %o, %o64 : tensor<5x1x3xf32>, tensor<5x1x3xf32>
}

// Even split: jagged q [12, H, D] with offsets [0, 6, 12] equals dense q
// [2, 6, H, D]. H = 2, D = 8, Lkv = 10, Dv = 4, gelu, scale 0.5.
func.func @dense(%q: tensor<12x2x8xf32>, %k: tensor<2x10x2x8xf32>, %v: tensor<2x10x2x4xf32>) -> tensor<12x2x4xf32> {
  %qd = tensor.expand_shape %q [[0, 1], [2], [3]] output_shape [2, 6, 2, 8] : tensor<12x2x8xf32> into tensor<2x6x2x8xf32>
  %o = fusion.gdpa %qd, %k, %v {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x10x2x8xf32>, tensor<2x10x2x4xf32> -> tensor<2x6x2x4xf32>
  %oc = tensor.collapse_shape %o [[0, 1], [2], [3]] : tensor<2x6x2x4xf32> into tensor<12x2x4xf32>
  return %oc : tensor<12x2x4xf32>
}
func.func @jagged_even(%q: tensor<12x2x8xf32>, %k: tensor<2x10x2x8xf32>, %v: tensor<2x10x2x4xf32>) -> tensor<12x2x4xf32> {
  %off = arith.constant dense<[0, 6, 12]> : tensor<3xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<3xi32>) {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<12x2x8xf32>, tensor<2x10x2x8xf32>, tensor<2x10x2x4xf32> -> tensor<12x2x4xf32>
  return %o : tensor<12x2x4xf32>
}

// Uneven split with an empty batch and a tail: T = 16, B = 4,
// offsets [0, 5, 5, 12, 14]: batches own 5, 0, 7 and 2 tokens, tokens 14 and
// 15 none. The reference runs dense gdpa on each batch's slice and inserts
// it into zeros. H = 2, D = 8, Lkv = 10, Dv = 4, gelu_tanh, scale 0.5.
func.func private @one_batch(%q: tensor<?x2x8xf32>, %k: tensor<4x10x2x8xf32>, %v: tensor<4x10x2x4xf32>, %b: index) -> tensor<?x2x4xf32> {
  %c0 = arith.constant 0 : index
  %l = tensor.dim %q, %c0 : tensor<?x2x8xf32>
  %qb = tensor.expand_shape %q [[0, 1], [2], [3]] output_shape [1, %l, 2, 8] : tensor<?x2x8xf32> into tensor<1x?x2x8xf32>
  %kb = tensor.extract_slice %k[%b, 0, 0, 0] [1, 10, 2, 8] [1, 1, 1, 1] : tensor<4x10x2x8xf32> to tensor<1x10x2x8xf32>
  %vb = tensor.extract_slice %v[%b, 0, 0, 0] [1, 10, 2, 4] [1, 1, 1, 1] : tensor<4x10x2x4xf32> to tensor<1x10x2x4xf32>
  %o = fusion.gdpa %qb, %kb, %vb {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<1x?x2x8xf32>, tensor<1x10x2x8xf32>, tensor<1x10x2x4xf32> -> tensor<1x?x2x4xf32>
  %oc = tensor.collapse_shape %o [[0, 1], [2], [3]] : tensor<1x?x2x4xf32> into tensor<?x2x4xf32>
  return %oc : tensor<?x2x4xf32>
}
func.func @per_batch(%q: tensor<16x2x8xf32>, %k: tensor<4x10x2x8xf32>, %v: tensor<4x10x2x4xf32>) -> tensor<16x2x4xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x2x4xf32>
  %out0 = linalg.fill ins(%zero : f32) outs(%e : tensor<16x2x4xf32>) -> tensor<16x2x4xf32>
  %q0 = tensor.extract_slice %q[0, 0, 0] [5, 2, 8] [1, 1, 1] : tensor<16x2x8xf32> to tensor<5x2x8xf32>
  %q2 = tensor.extract_slice %q[5, 0, 0] [7, 2, 8] [1, 1, 1] : tensor<16x2x8xf32> to tensor<7x2x8xf32>
  %q3 = tensor.extract_slice %q[12, 0, 0] [2, 2, 8] [1, 1, 1] : tensor<16x2x8xf32> to tensor<2x2x8xf32>
  %q0d = tensor.cast %q0 : tensor<5x2x8xf32> to tensor<?x2x8xf32>
  %q2d = tensor.cast %q2 : tensor<7x2x8xf32> to tensor<?x2x8xf32>
  %q3d = tensor.cast %q3 : tensor<2x2x8xf32> to tensor<?x2x8xf32>
  %o0 = call @one_batch(%q0d, %k, %v, %c0) : (tensor<?x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32>, index) -> tensor<?x2x4xf32>
  %o2 = call @one_batch(%q2d, %k, %v, %c2) : (tensor<?x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32>, index) -> tensor<?x2x4xf32>
  %o3 = call @one_batch(%q3d, %k, %v, %c3) : (tensor<?x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32>, index) -> tensor<?x2x4xf32>
  %o0s = tensor.cast %o0 : tensor<?x2x4xf32> to tensor<5x2x4xf32>
  %o2s = tensor.cast %o2 : tensor<?x2x4xf32> to tensor<7x2x4xf32>
  %o3s = tensor.cast %o3 : tensor<?x2x4xf32> to tensor<2x2x4xf32>
  %out1 = tensor.insert_slice %o0s into %out0[0, 0, 0] [5, 2, 4] [1, 1, 1] : tensor<5x2x4xf32> into tensor<16x2x4xf32>
  %out2 = tensor.insert_slice %o2s into %out1[5, 0, 0] [7, 2, 4] [1, 1, 1] : tensor<7x2x4xf32> into tensor<16x2x4xf32>
  %out3 = tensor.insert_slice %o3s into %out2[12, 0, 0] [2, 2, 4] [1, 1, 1] : tensor<2x2x4xf32> into tensor<16x2x4xf32>
  return %out3 : tensor<16x2x4xf32>
}
func.func @jagged_uneven(%q: tensor<16x2x8xf32>, %k: tensor<4x10x2x8xf32>, %v: tensor<4x10x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32> -> tensor<16x2x4xf32>
  return %o : tensor<16x2x4xf32>
}
func.func @jagged_uneven_i64(%q: tensor<16x2x8xf32>, %k: tensor<4x10x2x8xf32>, %v: tensor<4x10x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi64>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi64>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32> -> tensor<16x2x4xf32>
  return %o : tensor<16x2x4xf32>
}
// Negative: offsets[B] = T leaves no tail, so tokens 14 and 15 get batch 3's
// attention instead of zeros.
func.func @jagged_no_tail(%q: tensor<16x2x8xf32>, %k: tensor<4x10x2x8xf32>, %v: tensor<4x10x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 16]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32> -> tensor<16x2x4xf32>
  return %o : tensor<16x2x4xf32>
}
// Negative: moving the boundary by one token changes which keys token 5 sees.
func.func @jagged_shifted(%q: tensor<16x2x8xf32>, %k: tensor<4x10x2x8xf32>, %v: tensor<4x10x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 6, 6, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32> -> tensor<16x2x4xf32>
  return %o : tensor<16x2x4xf32>
}

// bf16 jagged: f32 arithmetic on the extended inputs, rounded once.
func.func @jagged_uneven_f32_rounded(%q: tensor<16x2x8xbf16>, %k: tensor<4x10x2x8xbf16>, %v: tensor<4x10x2x4xbf16>) -> tensor<16x2x4xbf16> {
  %qf = arith.extf %q : tensor<16x2x8xbf16> to tensor<16x2x8xf32>
  %kf = arith.extf %k : tensor<4x10x2x8xbf16> to tensor<4x10x2x8xf32>
  %vf = arith.extf %v : tensor<4x10x2x4xbf16> to tensor<4x10x2x4xf32>
  %o = call @jagged_uneven(%qf, %kf, %vf) : (tensor<16x2x8xf32>, tensor<4x10x2x8xf32>, tensor<4x10x2x4xf32>) -> tensor<16x2x4xf32>
  %ob = arith.truncf %o : tensor<16x2x4xf32> to tensor<16x2x4xbf16>
  return %ob : tensor<16x2x4xbf16>
}
func.func @jagged_uneven_bf16(%q: tensor<16x2x8xbf16>, %k: tensor<4x10x2x8xbf16>, %v: tensor<4x10x2x4xbf16>) -> tensor<16x2x4xbf16> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xbf16>, tensor<4x10x2x8xbf16>, tensor<4x10x2x4xbf16> -> tensor<16x2x4xbf16>
  return %o : tensor<16x2x4xbf16>
}
