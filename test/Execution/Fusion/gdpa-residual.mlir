// Reference semantics of fusion.gdpa's residual on the CPU: the attention
// plus the residual in f32, against fusion.gdpa then fusion.add (dense, a
// residual of another tensor and the query itself; jagged with an empty
// sequence and tokens past offsets[B], whose output is the residual alone),
// and bf16 rounded once (the f32 op then one truncation).
// RUN: fusion-runner %s -e residual_dense --compare=added_dense --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e residual_query --compare=added_query --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e residual_jagged --compare=added_jagged --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e residual_f32_rounded --compare=residual_bf16 --atol=1e-6 --rtol=1e-6 | FileCheck %s
// RUN: not fusion-runner %s -e residual_dense --compare=residual_dense_wrong --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Dense, Dv != D, the residual another tensor of the output's shape.
func.func @residual_dense(%q: tensor<2x6x2x8xf32>, %k: tensor<2x5x2x8xf32>, %v: tensor<2x5x2x4xf32>, %r: tensor<2x6x2x4xf32>) -> tensor<2x6x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v residual(%r : tensor<2x6x2x4xf32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32> -> tensor<2x6x2x4xf32>
  return %o : tensor<2x6x2x4xf32>
}
func.func @added_dense(%q: tensor<2x6x2x8xf32>, %k: tensor<2x5x2x8xf32>, %v: tensor<2x5x2x4xf32>, %r: tensor<2x6x2x4xf32>) -> tensor<2x6x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32> -> tensor<2x6x2x4xf32>
  %h = fusion.add %r, %o : tensor<2x6x2x4xf32>
  return %h : tensor<2x6x2x4xf32>
}
// The residual left out: must FAIL against residual_dense.
func.func @residual_dense_wrong(%q: tensor<2x6x2x8xf32>, %k: tensor<2x5x2x8xf32>, %v: tensor<2x5x2x4xf32>, %r: tensor<2x6x2x4xf32>) -> tensor<2x6x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32> -> tensor<2x6x2x4xf32>
  return %o : tensor<2x6x2x4xf32>
}

// The block's case: the query added back (D = Dv).
func.func @residual_query(%q: tensor<1x7x2x4xf32>, %k: tensor<1x3x2x4xf32>, %v: tensor<1x3x2x4xf32>) -> tensor<1x7x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v residual(%q : tensor<1x7x2x4xf32>) {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<1x7x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32> -> tensor<1x7x2x4xf32>
  return %o : tensor<1x7x2x4xf32>
}
func.func @added_query(%q: tensor<1x7x2x4xf32>, %k: tensor<1x3x2x4xf32>, %v: tensor<1x3x2x4xf32>) -> tensor<1x7x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<1x7x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32> -> tensor<1x7x2x4xf32>
  %h = fusion.add %o, %q : tensor<1x7x2x4xf32>
  return %h : tensor<1x7x2x4xf32>
}

// Jagged: sequences [0, 5), [5, 5) (empty), [5, 12), [12, 14); tokens 14
// and 15 belong to none and get the residual.
func.func @residual_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %r: tensor<16x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) residual(%r : tensor<16x2x4xf32>) {activation = #fusion.activation<relu>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x4xf32>
  return %o : tensor<16x2x4xf32>
}
func.func @added_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %r: tensor<16x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<relu>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x4xf32>
  %h = fusion.add %o, %r : tensor<16x2x4xf32>
  return %h : tensor<16x2x4xf32>
}

// bf16: the attention plus the residual in f32, rounded once.
func.func @residual_f32_rounded(%q: tensor<2x6x2x8xbf16>, %k: tensor<2x5x2x8xbf16>, %v: tensor<2x5x2x8xbf16>, %r: tensor<2x6x2x8xbf16>) -> tensor<2x6x2x8xbf16> {
  %qf = arith.extf %q : tensor<2x6x2x8xbf16> to tensor<2x6x2x8xf32>
  %kf = arith.extf %k : tensor<2x5x2x8xbf16> to tensor<2x5x2x8xf32>
  %vf = arith.extf %v : tensor<2x5x2x8xbf16> to tensor<2x5x2x8xf32>
  %rf = arith.extf %r : tensor<2x6x2x8xbf16> to tensor<2x6x2x8xf32>
  %o = fusion.gdpa %qf, %kf, %vf residual(%rf : tensor<2x6x2x8xf32>) {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32> -> tensor<2x6x2x8xf32>
  %ob = arith.truncf %o : tensor<2x6x2x8xf32> to tensor<2x6x2x8xbf16>
  return %ob : tensor<2x6x2x8xbf16>
}
func.func @residual_bf16(%q: tensor<2x6x2x8xbf16>, %k: tensor<2x5x2x8xbf16>, %v: tensor<2x5x2x8xbf16>, %r: tensor<2x6x2x8xbf16>) -> tensor<2x6x2x8xbf16> {
  %o = fusion.gdpa %q, %k, %v residual(%r : tensor<2x6x2x8xbf16>) {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xbf16>, tensor<2x5x2x8xbf16>, tensor<2x5x2x8xbf16> -> tensor<2x6x2x8xbf16>
  return %o : tensor<2x6x2x8xbf16>
}
