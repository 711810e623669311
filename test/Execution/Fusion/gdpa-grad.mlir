// Reference semantics of fusion.gdpa_grad on the CPU: central finite
// differences precomputed in float64 for fixed inputs (every activation), and
// directional derivatives of fusion.gdpa on random f32 inputs (dense and
// jagged with an empty batch and a tail); jagged against dense; bf16; the
// residual operand against a fusion.add of dq and the residual (dense,
// jagged with tokens outside every sequence, bf16 rounded once); the
// RMSNorm-gradient prologue against rms_norm_grad then gdpa_grad (dense bf16
// with its weight and grad_residual, do rounded to bf16 as in the unfused
// program; jagged f32 without a weight); grad_residual without the prologue
// as residual(%do).
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e fd_silu --compare=analytic_silu --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fd_gelu --compare=analytic_gelu --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fd_identity --compare=analytic_identity --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fd_jagged --compare=analytic_jagged --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e dense_grad --compare=jagged_grad --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e f32_grad_rounded --compare=bf16_grad --atol=2e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e residual_dense --compare=added_dense --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e residual_jagged --compare=added_jagged --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e residual_f32_rounded --compare=residual_bf16 --atol=1e-6 --rtol=1e-6 | FileCheck %s
// RUN: fusion-runner %s -e prologue_dense --compare=prologue_dense_unfused --atol=1e-6 --rtol=1e-6 | FileCheck %s
// RUN: fusion-runner %s -e prologue_jagged --compare=prologue_jagged_unfused --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e grad_residual --compare=grad_as_residual --atol=1e-6 --rtol=1e-6 | FileCheck %s
// RUN: not fusion-runner %s -e prologue_dense --compare=prologue_dense_f32_dh --atol=1e-6 --rtol=1e-6 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e residual_dense --compare=residual_dense_wrong --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e fd_silu --compare=analytic_silu_wrong --atol=1e-2 --rtol=1e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Central differences of sum(do * gdpa(q, k, v)) in float64
// (Inputs/hand_values.py gdpa_grad), B = 1, Lq = 2, Lkv = 3, H = 2, D = 2,
// Dv = 3: silu (scale 0.5), gelu_tanh (0.5), gelu (1), relu (0.5, with
// q[0,0,0,0] = 0.625 so that no score sits on the kink), identity (0.25).
func.func @expected() -> (tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>) {
  %dq0 = arith.constant dense<[[[[-0.3870796681, 0.8022466337], [2.128431668, 0.2305642864]], [[-0.7442111514, 0.147248544], [-0.3329951627, 0.4727858152]]]]> : tensor<1x2x2x2xf32>
  %dk0 = arith.constant dense<[[[[-0.06652718554, 0.08601812362], [-0.4234442806, -0.1200791689]], [[-0.6165981246, 0.9224610731], [1.779951839, -0.03654235492]], [[-0.3901968306, 0.2011061998], [-2.838417112, 2.052749218]]]]> : tensor<1x3x2x2xf32>
  %dv0 = arith.constant dense<[[[[0.02736396865, -0.08209190605, -0.1094558748], [-0.5860497613, 0.190476931, -0.0805887585]], [[0.3939851914, -0.2861310198, -0.05303902273], [1.979944526, -0.005121943314, -0.1381319312]], [[-0.3679619818, 0.502346006, 0.4492300305], [0.9755847252, -0.2755341377, 0.1074444654]]]]> : tensor<1x3x2x3xf32>
  %dq1 = arith.constant dense<[[[[-0.2895249854, 0.8737144794], [2.463400725, 0.3885395663]], [[-0.9366925827, 0.3125908842], [-0.3344683266, 0.4100596688]]]]> : tensor<1x2x2x2xf32>
  %dk1 = arith.constant dense<[[[[-0.0598105534, 0.08154036912], [-0.6763930163, 0.1065101685]], [[-0.6184035456, 1.015280068], [2.090548561, -0.03124872133]], [[-0.514778923, 0.3427877947], [-3.359110557, 2.435361676]]]]> : tensor<1x3x2x2xf32>
  %dv1 = arith.constant dense<[[[[0.02508116226, -0.075243487, -0.1003246493], [-0.2927129947, 0.04786159502, -0.009860097183]], [[0.432512082, -0.2947877604, -0.02537590227], [2.278053068, -0.01341432376, -0.1540945824]], [[-0.3150295836, 0.5199901387, 0.5374506939], [1.10096197, -0.3259330228, 0.130888231]]]]> : tensor<1x3x2x3xf32>
  %dq2 = arith.constant dense<[[[[-0.4639290925, 2.046081288], [5.245855285, 1.124045164]], [[-2.278526078, 1.124254067], [-1.067767461, 1.132408614]]]]> : tensor<1x2x2x2xf32>
  %dk2 = arith.constant dense<[[[[-0.0873446635, 0.1415631092], [-0.7785031759, -0.02537590671]], [[-1.149325444, 2.243639242], [4.422319963, 0.04639024698]], [[-1.234404025, 0.9185379115], [-7.824822338, 5.661683377]]]]> : tensor<1x3x2x2xf32>
  %dv2 = arith.constant dense<[[[[0.03856719211, -0.1157015772, -0.1542687693], [-0.08121003559, -0.1349609651, 0.09256133682]], [[1.020679955, -0.6159931942, 0.07555951997], [5.215173833, 0.08805694485, -0.4291204529]], [[-0.4501581019, 1.0999473, 1.374736498], [2.663815491, -0.8196084496, 0.3366186108]]]]> : tensor<1x3x2x3xf32>
  %dq3 = arith.constant dense<[[[[-0.3749999999, 0.9375000003], [2.1875, 0.7812500002]], [[-1.03125, 0.515625], [-0.4687499999, 0.546875]]]]> : tensor<1x2x2x2xf32>
  %dk3 = arith.constant dense<[[[[-0.0781249998, 0.1249999999], [0.0, 0.0]], [[-0.6250000002, 1.0], [2.0, 0.0]], [[-0.515625, 0.34375], [-3.5, 2.5]]]]> : tensor<1x3x2x2xf32>
  %dv3 = arith.constant dense<[[[[0.06249999984, -0.03124999992, 0.01562499996], [0.0, 0.0, 0.0]], [[0.5781250001, -0.2890625002, 0.1445312501], [2.65625, 0.0937500001, -0.25]], [[-0.1875, 0.5624999999, 0.7499999999], [1.484375, -0.359375, 0.1250000001]]]]> : tensor<1x3x2x3xf32>
  %dq4 = arith.constant dense<[[[[-0.6093749998, 0.6796875001], [1.34375, -0.1093749999]], [[-0.3359375, -0.1796875], [-0.515625, 0.8359375001]]]]> : tensor<1x2x2x2xf32>
  %dk4 = arith.constant dense<[[[[-0.07812500002, 0.09374999999], [0.6250000001, -0.96875]], [[-0.6015625, 0.734375], [0.9999999998, 0.0]], [[-0.1171874999, -0.1093749999], [-1.75, 1.25]]]]> : tensor<1x3x2x2xf32>
  %dv4 = arith.constant dense<[[[[0.03124999992, -0.09374999999, -0.1250000001], [-1.28125, 0.53125, -0.25]], [[0.3242187501, -0.26953125, -0.1015625], [1.328125, 0.0468750001, -0.125]], [[-0.4687499999, 0.4687499999, 0.2812500001], [0.7421874999, -0.1796875, 0.06250000006]]]]> : tensor<1x3x2x3xf32>
  return %dq0, %dk0, %dv0, %dq1, %dk1, %dv1, %dq2, %dk2, %dv2, %dq3, %dk3, %dv3, %dq4, %dk4, %dv4 : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
}
func.func @hand() -> (tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>) {
  %q = arith.constant dense<[[[[0.5, -1.0], [1.0, 0.25]], [[-0.75, 0.5], [2.0, -1.5]]]]> : tensor<1x2x2x2xf32>
  %qr = arith.constant dense<[[[[0.625, -1.0], [1.0, 0.25]], [[-0.75, 0.5], [2.0, -1.5]]]]> : tensor<1x2x2x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.5], [-0.5, 1.0]], [[0.25, -1.0], [1.5, 0.5]], [[-1.5, 0.75], [0.5, -0.25]]]]> : tensor<1x3x2x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0, -1.0], [0.5, -0.5, 1.5]], [[-2.0, 0.5, 1.0], [1.0, 1.0, -1.0]], [[0.25, -0.75, 2.0], [-1.5, 0.5, 0.25]]]]> : tensor<1x3x2x3xf32>
  %do = arith.constant dense<[[[[1.0, -0.5, 0.25], [0.5, 1.5, -1.0]], [[-0.25, 0.75, 1.0], [2.0, -1.0, 0.5]]]]> : tensor<1x2x2x3xf32>
  %dq0, %dk0, %dv0 = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
  %dq1, %dk1, %dv1 = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
  %dq2, %dk2, %dv2 = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu>, scale = 1.0 : f32}
      : tensor<1x2x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
  %dq3, %dk3, %dv3 = fusion.gdpa_grad %do, %qr, %k, %v {activation = #fusion.activation<relu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
  %dq4, %dk4, %dv4 = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<identity>, scale = 2.5e-01 : f32}
      : tensor<1x2x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
  return %dq0, %dk0, %dv0, %dq1, %dk1, %dv1, %dq2, %dk2, %dv2, %dq3, %dk3, %dv3, %dq4, %dk4, %dv4 : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>, tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32>
}

// Directional derivatives on random inputs, h = 1e-2, along uq, uk, uv
// separately: fd = sum(do * (gdpa(+h) - gdpa(-h))) / 2h, analytic =
// [sum(dq * uq), sum(dk * uk), sum(dv * uv)].
func.func private @dot(%a: tensor<?xf32>, %b: tensor<?xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %t = arith.addf %o, %p : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %r = tensor.extract %s[] : tensor<f32>
  return %r : f32
}
func.func private @dot_2x6x2x8(%a: tensor<2x6x2x8xf32>, %b: tensor<2x6x2x8xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<2x6x2x8xf32> into tensor<192xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2, 3]] : tensor<2x6x2x8xf32> into tensor<192xf32>
  %ad = tensor.cast %af : tensor<192xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<192xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_2x8x2x8(%a: tensor<2x8x2x8xf32>, %b: tensor<2x8x2x8xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<2x8x2x8xf32> into tensor<256xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2, 3]] : tensor<2x8x2x8xf32> into tensor<256xf32>
  %ad = tensor.cast %af : tensor<256xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<256xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_2x8x2x4(%a: tensor<2x8x2x4xf32>, %b: tensor<2x8x2x4xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<2x8x2x4xf32> into tensor<128xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2, 3]] : tensor<2x8x2x4xf32> into tensor<128xf32>
  %ad = tensor.cast %af : tensor<128xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<128xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_2x6x2x4(%a: tensor<2x6x2x4xf32>, %b: tensor<2x6x2x4xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<2x6x2x4xf32> into tensor<96xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2, 3]] : tensor<2x6x2x4xf32> into tensor<96xf32>
  %ad = tensor.cast %af : tensor<96xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<96xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_16x2x8(%a: tensor<16x2x8xf32>, %b: tensor<16x2x8xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2]] : tensor<16x2x8xf32> into tensor<256xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2]] : tensor<16x2x8xf32> into tensor<256xf32>
  %ad = tensor.cast %af : tensor<256xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<256xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_4x8x2x8(%a: tensor<4x8x2x8xf32>, %b: tensor<4x8x2x8xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<4x8x2x8xf32> into tensor<512xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2, 3]] : tensor<4x8x2x8xf32> into tensor<512xf32>
  %ad = tensor.cast %af : tensor<512xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<512xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_4x8x2x4(%a: tensor<4x8x2x4xf32>, %b: tensor<4x8x2x4xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2, 3]] : tensor<4x8x2x4xf32> into tensor<256xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2, 3]] : tensor<4x8x2x4xf32> into tensor<256xf32>
  %ad = tensor.cast %af : tensor<256xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<256xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot_16x2x4(%a: tensor<16x2x4xf32>, %b: tensor<16x2x4xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1, 2]] : tensor<16x2x4xf32> into tensor<128xf32>
  %bf = tensor.collapse_shape %b [[0, 1, 2]] : tensor<16x2x4xf32> into tensor<128xf32>
  %ad = tensor.cast %af : tensor<128xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<128xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
// Dense, silu, scale 0.5, Dv = 4 != D = 8. The wrong variant differentiates gelu.
func.func private @fwd_silu(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x4xf32>
  return %o : tensor<2x6x2x4xf32>
}
func.func @fd_silu(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %hq = arith.constant dense<1.0e-02> : tensor<2x6x2x8xf32>
  %sq = arith.mulf %uq, %hq : tensor<2x6x2x8xf32>
  %qp = arith.addf %q, %sq : tensor<2x6x2x8xf32>
  %qm = arith.subf %q, %sq : tensor<2x6x2x8xf32>
  %hk = arith.constant dense<1.0e-02> : tensor<2x8x2x8xf32>
  %sk = arith.mulf %uk, %hk : tensor<2x8x2x8xf32>
  %kp = arith.addf %k, %sk : tensor<2x8x2x8xf32>
  %km = arith.subf %k, %sk : tensor<2x8x2x8xf32>
  %hv = arith.constant dense<1.0e-02> : tensor<2x8x2x4xf32>
  %sv = arith.mulf %uv, %hv : tensor<2x8x2x4xf32>
  %vp = arith.addf %v, %sv : tensor<2x8x2x4xf32>
  %vm = arith.subf %v, %sv : tensor<2x8x2x4xf32>
  %y1 = call @fwd_silu(%qp, %k, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y2 = call @fwd_silu(%qm, %k, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y3 = call @fwd_silu(%q, %kp, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y4 = call @fwd_silu(%q, %km, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y5 = call @fwd_silu(%q, %k, %vp) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y6 = call @fwd_silu(%q, %k, %vm) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %d1 = arith.subf %y1, %y2 : tensor<2x6x2x4xf32>
  %d2 = arith.subf %y3, %y4 : tensor<2x6x2x4xf32>
  %d3 = arith.subf %y5, %y6 : tensor<2x6x2x4xf32>
  %a1 = call @dot_2x6x2x4(%do, %d1) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %a2 = call @dot_2x6x2x4(%do, %d2) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %a3 = call @dot_2x6x2x4(%do, %d3) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %inv2h = arith.constant 50.0 : f32
  %s1 = arith.mulf %a1, %inv2h : f32
  %s2 = arith.mulf %a2, %inv2h : f32
  %s3 = arith.mulf %a3, %inv2h : f32
  %r = tensor.from_elements %s1, %s2, %s3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @analytic_silu(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %a1 = call @dot_2x6x2x8(%dq, %uq) : (tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> f32
  %a2 = call @dot_2x8x2x8(%dk, %uk) : (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> f32
  %a3 = call @dot_2x8x2x4(%dv, %uv) : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> f32
  %r = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @analytic_silu_wrong(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %a1 = call @dot_2x6x2x8(%dq, %uq) : (tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> f32
  %a2 = call @dot_2x8x2x8(%dk, %uk) : (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> f32
  %a3 = call @dot_2x8x2x4(%dv, %uv) : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> f32
  %r = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
// Dense, gelu (erf), scale 0.25.
func.func private @fwd_gelu(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu>, scale = 2.5e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x4xf32>
  return %o : tensor<2x6x2x4xf32>
}
func.func @fd_gelu(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %hq = arith.constant dense<1.0e-02> : tensor<2x6x2x8xf32>
  %sq = arith.mulf %uq, %hq : tensor<2x6x2x8xf32>
  %qp = arith.addf %q, %sq : tensor<2x6x2x8xf32>
  %qm = arith.subf %q, %sq : tensor<2x6x2x8xf32>
  %hk = arith.constant dense<1.0e-02> : tensor<2x8x2x8xf32>
  %sk = arith.mulf %uk, %hk : tensor<2x8x2x8xf32>
  %kp = arith.addf %k, %sk : tensor<2x8x2x8xf32>
  %km = arith.subf %k, %sk : tensor<2x8x2x8xf32>
  %hv = arith.constant dense<1.0e-02> : tensor<2x8x2x4xf32>
  %sv = arith.mulf %uv, %hv : tensor<2x8x2x4xf32>
  %vp = arith.addf %v, %sv : tensor<2x8x2x4xf32>
  %vm = arith.subf %v, %sv : tensor<2x8x2x4xf32>
  %y1 = call @fwd_gelu(%qp, %k, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y2 = call @fwd_gelu(%qm, %k, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y3 = call @fwd_gelu(%q, %kp, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y4 = call @fwd_gelu(%q, %km, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y5 = call @fwd_gelu(%q, %k, %vp) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y6 = call @fwd_gelu(%q, %k, %vm) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %d1 = arith.subf %y1, %y2 : tensor<2x6x2x4xf32>
  %d2 = arith.subf %y3, %y4 : tensor<2x6x2x4xf32>
  %d3 = arith.subf %y5, %y6 : tensor<2x6x2x4xf32>
  %a1 = call @dot_2x6x2x4(%do, %d1) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %a2 = call @dot_2x6x2x4(%do, %d2) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %a3 = call @dot_2x6x2x4(%do, %d3) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %inv2h = arith.constant 50.0 : f32
  %s1 = arith.mulf %a1, %inv2h : f32
  %s2 = arith.mulf %a2, %inv2h : f32
  %s3 = arith.mulf %a3, %inv2h : f32
  %r = tensor.from_elements %s1, %s2, %s3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @analytic_gelu(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu>, scale = 2.5e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %a1 = call @dot_2x6x2x8(%dq, %uq) : (tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> f32
  %a2 = call @dot_2x8x2x8(%dk, %uk) : (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> f32
  %a3 = call @dot_2x8x2x4(%dv, %uv) : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> f32
  %r = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
// Dense, identity, scale 0.5.
func.func private @fwd_identity(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<identity>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x4xf32>
  return %o : tensor<2x6x2x4xf32>
}
func.func @fd_identity(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %hq = arith.constant dense<1.0e-02> : tensor<2x6x2x8xf32>
  %sq = arith.mulf %uq, %hq : tensor<2x6x2x8xf32>
  %qp = arith.addf %q, %sq : tensor<2x6x2x8xf32>
  %qm = arith.subf %q, %sq : tensor<2x6x2x8xf32>
  %hk = arith.constant dense<1.0e-02> : tensor<2x8x2x8xf32>
  %sk = arith.mulf %uk, %hk : tensor<2x8x2x8xf32>
  %kp = arith.addf %k, %sk : tensor<2x8x2x8xf32>
  %km = arith.subf %k, %sk : tensor<2x8x2x8xf32>
  %hv = arith.constant dense<1.0e-02> : tensor<2x8x2x4xf32>
  %sv = arith.mulf %uv, %hv : tensor<2x8x2x4xf32>
  %vp = arith.addf %v, %sv : tensor<2x8x2x4xf32>
  %vm = arith.subf %v, %sv : tensor<2x8x2x4xf32>
  %y1 = call @fwd_identity(%qp, %k, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y2 = call @fwd_identity(%qm, %k, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y3 = call @fwd_identity(%q, %kp, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y4 = call @fwd_identity(%q, %km, %v) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y5 = call @fwd_identity(%q, %k, %vp) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %y6 = call @fwd_identity(%q, %k, %vm) : (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) -> tensor<2x6x2x4xf32>
  %d1 = arith.subf %y1, %y2 : tensor<2x6x2x4xf32>
  %d2 = arith.subf %y3, %y4 : tensor<2x6x2x4xf32>
  %d3 = arith.subf %y5, %y6 : tensor<2x6x2x4xf32>
  %a1 = call @dot_2x6x2x4(%do, %d1) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %a2 = call @dot_2x6x2x4(%do, %d2) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %a3 = call @dot_2x6x2x4(%do, %d3) : (tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>) -> f32
  %inv2h = arith.constant 50.0 : f32
  %s1 = arith.mulf %a1, %inv2h : f32
  %s2 = arith.mulf %a2, %inv2h : f32
  %s3 = arith.mulf %a3, %inv2h : f32
  %r = tensor.from_elements %s1, %s2, %s3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @analytic_identity(%q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %do: tensor<2x6x2x4xf32>, %uq: tensor<2x6x2x8xf32>, %uk: tensor<2x8x2x8xf32>, %uv: tensor<2x8x2x4xf32>) -> tensor<3xf32> {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<identity>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %a1 = call @dot_2x6x2x8(%dq, %uq) : (tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> f32
  %a2 = call @dot_2x8x2x8(%dk, %uk) : (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> f32
  %a3 = call @dot_2x8x2x4(%dv, %uv) : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> f32
  %r = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
// Jagged, gelu_tanh, offsets [0, 5, 5, 12, 14]: an empty batch (its dk, dv
// must be zero) and two tail tokens (their dq must be zero).
func.func private @fwd_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x4xf32>
  return %o : tensor<16x2x4xf32>
}
func.func @fd_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %do: tensor<16x2x4xf32>, %uq: tensor<16x2x8xf32>, %uk: tensor<4x8x2x8xf32>, %uv: tensor<4x8x2x4xf32>) -> tensor<3xf32> {
  %hq = arith.constant dense<1.0e-02> : tensor<16x2x8xf32>
  %sq = arith.mulf %uq, %hq : tensor<16x2x8xf32>
  %qp = arith.addf %q, %sq : tensor<16x2x8xf32>
  %qm = arith.subf %q, %sq : tensor<16x2x8xf32>
  %hk = arith.constant dense<1.0e-02> : tensor<4x8x2x8xf32>
  %sk = arith.mulf %uk, %hk : tensor<4x8x2x8xf32>
  %kp = arith.addf %k, %sk : tensor<4x8x2x8xf32>
  %km = arith.subf %k, %sk : tensor<4x8x2x8xf32>
  %hv = arith.constant dense<1.0e-02> : tensor<4x8x2x4xf32>
  %sv = arith.mulf %uv, %hv : tensor<4x8x2x4xf32>
  %vp = arith.addf %v, %sv : tensor<4x8x2x4xf32>
  %vm = arith.subf %v, %sv : tensor<4x8x2x4xf32>
  %y1 = call @fwd_jagged(%qp, %k, %v) : (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32>
  %y2 = call @fwd_jagged(%qm, %k, %v) : (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32>
  %y3 = call @fwd_jagged(%q, %kp, %v) : (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32>
  %y4 = call @fwd_jagged(%q, %km, %v) : (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32>
  %y5 = call @fwd_jagged(%q, %k, %vp) : (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32>
  %y6 = call @fwd_jagged(%q, %k, %vm) : (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) -> tensor<16x2x4xf32>
  %d1 = arith.subf %y1, %y2 : tensor<16x2x4xf32>
  %d2 = arith.subf %y3, %y4 : tensor<16x2x4xf32>
  %d3 = arith.subf %y5, %y6 : tensor<16x2x4xf32>
  %a1 = call @dot_16x2x4(%do, %d1) : (tensor<16x2x4xf32>, tensor<16x2x4xf32>) -> f32
  %a2 = call @dot_16x2x4(%do, %d2) : (tensor<16x2x4xf32>, tensor<16x2x4xf32>) -> f32
  %a3 = call @dot_16x2x4(%do, %d3) : (tensor<16x2x4xf32>, tensor<16x2x4xf32>) -> f32
  %inv2h = arith.constant 50.0 : f32
  %s1 = arith.mulf %a1, %inv2h : f32
  %s2 = arith.mulf %a2, %inv2h : f32
  %s3 = arith.mulf %a3, %inv2h : f32
  %r = tensor.from_elements %s1, %s2, %s3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @analytic_jagged(%q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %do: tensor<16x2x4xf32>, %uq: tensor<16x2x8xf32>, %uk: tensor<4x8x2x8xf32>, %uv: tensor<4x8x2x4xf32>) -> tensor<3xf32> {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<16x2x4xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
  %a1 = call @dot_16x2x8(%dq, %uq) : (tensor<16x2x8xf32>, tensor<16x2x8xf32>) -> f32
  %a2 = call @dot_4x8x2x8(%dk, %uk) : (tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>) -> f32
  %a3 = call @dot_4x8x2x4(%dv, %uv) : (tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>) -> f32
  %r = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %r : tensor<3xf32>
}

// Jagged with an even split (offsets [0, 6, 12]) against dense [2, 6, H, D].
func.func @dense_grad(%do: tensor<12x2x4xf32>, %q: tensor<12x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>) -> (tensor<12x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) {
  %qd = tensor.expand_shape %q [[0, 1], [2], [3]] output_shape [2, 6, 2, 8] : tensor<12x2x8xf32> into tensor<2x6x2x8xf32>
  %dod = tensor.expand_shape %do [[0, 1], [2], [3]] output_shape [2, 6, 2, 4] : tensor<12x2x4xf32> into tensor<2x6x2x4xf32>
  %dq, %dk, %dv = fusion.gdpa_grad %dod, %qd, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %dqc = tensor.collapse_shape %dq [[0, 1], [2], [3]] : tensor<2x6x2x8xf32> into tensor<12x2x8xf32>
  return %dqc, %dk, %dv : tensor<12x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
}
func.func @jagged_grad(%do: tensor<12x2x4xf32>, %q: tensor<12x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>) -> (tensor<12x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) {
  %off = arith.constant dense<[0, 6, 12]> : tensor<3xi64>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<3xi64>) {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<12x2x4xf32>, tensor<12x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<12x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  return %dq, %dk, %dv : tensor<12x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
}

// bf16: f32 arithmetic, each gradient rounded once to its operand's type.
func.func @f32_grad_rounded(%do: tensor<2x6x2x4xbf16>, %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x4xbf16>) -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16>) {
  %dof = arith.extf %do : tensor<2x6x2x4xbf16> to tensor<2x6x2x4xf32>
  %qf = arith.extf %q : tensor<2x6x2x8xbf16> to tensor<2x6x2x8xf32>
  %kf = arith.extf %k : tensor<2x8x2x8xbf16> to tensor<2x8x2x8xf32>
  %vf = arith.extf %v : tensor<2x8x2x4xbf16> to tensor<2x8x2x4xf32>
  %dq, %dk, %dv = fusion.gdpa_grad %dof, %qf, %kf, %vf {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %dqb = arith.truncf %dq : tensor<2x6x2x8xf32> to tensor<2x6x2x8xbf16>
  %dkb = arith.truncf %dk : tensor<2x8x2x8xf32> to tensor<2x8x2x8xbf16>
  %dvb = arith.truncf %dv : tensor<2x8x2x4xf32> to tensor<2x8x2x4xbf16>
  return %dqb, %dkb, %dvb : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16>
}
func.func @bf16_grad(%do: tensor<2x6x2x4xbf16>, %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x4xbf16>) -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xbf16>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16> -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16>
  return %dq, %dk, %dv : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16>
}

// The residual: dq + r in f32, against gdpa_grad then fusion.add (f32, so
// the add's extra rounding is exact up to f32); jagged with an empty
// sequence and tokens past offsets[B], whose dq is the residual itself.
func.func @residual_dense(%do: tensor<2x6x2x4xf32>, %q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %r: tensor<2x6x2x8xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%r : tensor<2x6x2x8xf32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  return %dq, %dk, %dv : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
}
func.func @added_dense(%do: tensor<2x6x2x4xf32>, %q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %r: tensor<2x6x2x8xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %sum = fusion.add %r, %dq : tensor<2x6x2x8xf32>
  return %sum, %dk, %dv : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
}
// The residual left out (dq alone): must FAIL against residual_dense.
func.func @residual_dense_wrong(%do: tensor<2x6x2x4xf32>, %q: tensor<2x6x2x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x4xf32>, %r: tensor<2x6x2x8xf32>) -> (tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  return %dq, %dk, %dv : tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
}
func.func @residual_jagged(%do: tensor<16x2x4xf32>, %q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %r: tensor<16x2x8xf32>) -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<5xi32>) residual(%r : tensor<16x2x8xf32>) {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<16x2x4xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
  return %dq, %dk, %dv : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
}
func.func @added_jagged(%do: tensor<16x2x4xf32>, %q: tensor<16x2x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %r: tensor<16x2x8xf32>) -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<5xi32>) {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<16x2x4xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
  %sum = fusion.add %dq, %r : tensor<16x2x8xf32>
  return %sum, %dk, %dv : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
}

// bf16: dq + r in f32 and rounded once, as the f32 op then one truncation.
func.func @residual_f32_rounded(%do: tensor<2x6x2x4xbf16>, %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x4xbf16>, %r: tensor<2x6x2x8xbf16>) -> tensor<2x6x2x8xbf16> {
  %dof = arith.extf %do : tensor<2x6x2x4xbf16> to tensor<2x6x2x4xf32>
  %qf = arith.extf %q : tensor<2x6x2x8xbf16> to tensor<2x6x2x8xf32>
  %kf = arith.extf %k : tensor<2x8x2x8xbf16> to tensor<2x8x2x8xf32>
  %vf = arith.extf %v : tensor<2x8x2x4xbf16> to tensor<2x8x2x4xf32>
  %rf = arith.extf %r : tensor<2x6x2x8xbf16> to tensor<2x6x2x8xf32>
  %dq, %dk, %dv = fusion.gdpa_grad %dof, %qf, %kf, %vf residual(%rf : tensor<2x6x2x8xf32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xf32>, tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32> -> tensor<2x6x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>
  %dqb = arith.truncf %dq : tensor<2x6x2x8xf32> to tensor<2x6x2x8xbf16>
  return %dqb : tensor<2x6x2x8xbf16>
}
func.func @residual_bf16(%do: tensor<2x6x2x4xbf16>, %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x4xbf16>, %r: tensor<2x6x2x8xbf16>) -> tensor<2x6x2x8xbf16> {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%r : tensor<2x6x2x8xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x4xbf16>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16> -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x4xbf16>
  return %dq : tensor<2x6x2x8xbf16>
}

// The RMSNorm-gradient prologue against its unfused composition,
// rms_norm_grad over the [.., H * Dv] rows, expand_shape, gdpa_grad: bf16
// with rms_weight and grad_residual (the composition's residual(%dh)), whose
// do is rounded to bf16 before gdpa_grad reads it in both, so they agree
// exactly; the composition with dh kept in f32 differs (must FAIL).
func.func @prologue_dense(%dy: tensor<2x6x2x8xbf16>, %x: tensor<2x6x2x8xbf16>, %rstd: tensor<2x6xf32>, %w: tensor<16xbf16>,
                          %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>) {
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %dy, %q, %k, %v rms_norm_grad(%x, %rstd : tensor<2x6x2x8xbf16>, tensor<2x6xf32>)
      rms_weight(%w : tensor<16xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32, grad_residual}
      : tensor<2x6x2x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
      -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>
  return %dq, %dk, %dv, %dw : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>
}
func.func @prologue_dense_unfused(%dy: tensor<2x6x2x8xbf16>, %x: tensor<2x6x2x8xbf16>, %rstd: tensor<2x6xf32>, %w: tensor<16xbf16>,
                                  %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>) {
  %dyf = tensor.collapse_shape %dy [[0], [1], [2, 3]] : tensor<2x6x2x8xbf16> into tensor<2x6x16xbf16>
  %xf = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<2x6x2x8xbf16> into tensor<2x6x16xbf16>
  %dhf, %dw = fusion.rms_norm_grad %dyf, %xf, %rstd weight(%w : tensor<16xbf16>)
      : tensor<2x6x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6xf32> -> tensor<2x6x16xbf16>, tensor<16xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xbf16> into tensor<2x6x2x8xbf16>
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %v residual(%dh : tensor<2x6x2x8xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
      -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
  return %dq, %dk, %dv, %dw : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>
}
func.func @prologue_dense_f32_dh(%dy: tensor<2x6x2x8xbf16>, %x: tensor<2x6x2x8xbf16>, %rstd: tensor<2x6xf32>, %w: tensor<16xbf16>,
                                 %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>) {
  %dyf = tensor.collapse_shape %dy [[0], [1], [2, 3]] : tensor<2x6x2x8xbf16> into tensor<2x6x16xbf16>
  %xf = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<2x6x2x8xbf16> into tensor<2x6x16xbf16>
  %dhf, %dw = fusion.rms_norm_grad %dyf, %xf, %rstd weight(%w : tensor<16xbf16>)
      : tensor<2x6x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6xf32> -> tensor<2x6x16xf32>, tensor<16xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 6, 2, 8] : tensor<2x6x16xf32> into tensor<2x6x2x8xf32>
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %v residual(%dh : tensor<2x6x2x8xf32>) {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xf32>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
      -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
  return %dq, %dk, %dv, %dw : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<16xf32>
}

// The prologue without a weight on jagged q (an empty sequence, tokens past
// offsets[B], whose dq is the residual alone), Dv != D, a residual operand.
func.func @prologue_jagged(%dy: tensor<16x2x4xf32>, %x: tensor<16x2x4xf32>, %rstd: tensor<16xf32>, %q: tensor<16x2x8xf32>,
                           %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %r: tensor<16x2x8xf32>)
    -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %dq, %dk, %dv = fusion.gdpa_grad %dy, %q, %k, %v offsets(%off : tensor<5xi32>) residual(%r : tensor<16x2x8xf32>)
      rms_norm_grad(%x, %rstd : tensor<16x2x4xf32>, tensor<16xf32>) {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<16x2x4xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
  return %dq, %dk, %dv : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
}
func.func @prologue_jagged_unfused(%dy: tensor<16x2x4xf32>, %x: tensor<16x2x4xf32>, %rstd: tensor<16xf32>, %q: tensor<16x2x8xf32>,
                                   %k: tensor<4x8x2x8xf32>, %v: tensor<4x8x2x4xf32>, %r: tensor<16x2x8xf32>)
    -> (tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>) {
  %off = arith.constant dense<[0, 5, 5, 12, 14]> : tensor<5xi32>
  %dyf = tensor.collapse_shape %dy [[0], [1, 2]] : tensor<16x2x4xf32> into tensor<16x8xf32>
  %xf = tensor.collapse_shape %x [[0], [1, 2]] : tensor<16x2x4xf32> into tensor<16x8xf32>
  %dhf = fusion.rms_norm_grad %dyf, %xf, %rstd : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<16x8xf32>
  %dh = tensor.expand_shape %dhf [[0], [1, 2]] output_shape [16, 2, 4] : tensor<16x8xf32> into tensor<16x2x4xf32>
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %v offsets(%off : tensor<5xi32>) residual(%r : tensor<16x2x8xf32>) {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<16x2x4xf32>, tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32> -> tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
  return %dq, %dk, %dv : tensor<16x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x4xf32>
}

// grad_residual without the prologue adds grad itself: residual(%do).
func.func @grad_residual(%do: tensor<2x6x2x8xbf16>, %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32, grad_residual}
      : tensor<2x6x2x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16> -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
  return %dq, %dk, %dv : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
}
func.func @grad_as_residual(%do: tensor<2x6x2x8xbf16>, %q: tensor<2x6x2x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%do : tensor<2x6x2x8xbf16>) {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<2x6x2x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16> -> tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
  return %dq, %dk, %dv : tensor<2x6x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
}
