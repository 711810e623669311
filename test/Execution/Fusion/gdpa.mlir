// Reference semantics of fusion.gdpa (dense layout) on the CPU: every
// activation against float64 hand values, then an independent linalg
// formulation on random inputs (Dv != D, Lq != Lkv, scale != 1), bf16 and f16,
// and dynamic shapes.
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_silu --compare=fusion_silu --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_gelu_tanh --compare=fusion_gelu_tanh --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_silu_bf16 --compare=fusion_silu_bf16 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e linalg_silu_f16 --compare=fusion_silu_f16 --atol=1e-3 --rtol=1e-3 | FileCheck %s
// RUN: fusion-runner %s -e fusion_silu --compare=fusion_silu_dynamic --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e expected --compare=hand_gelus_swapped --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e linalg_silu --compare=fusion_silu_scale_after --atol=1e-3 --rtol=1e-3 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Hand values (float64, Inputs/hand_values.py gdpa): B = 1, Lq = 2, Lkv = 3,
// H = 2, D = 2, Dv = 3; activations identity, relu, gelu, gelu_tanh, silu at
// scale 0.5, then gelu_tanh at scale 1. One score is exactly 0 (relu's kink).
func.func @expected() -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) {
  %e0 = arith.constant dense<[[[[-1.3125, 0.84375, -0.9375], [0.421875, 0.984375, -0.9453125]], [[0.625, -1.234375, 1.40625], [-0.53125, 2.09375, -2.828125]]]]> : tensor<1x2x2x3xf32>
  %e1 = arith.constant dense<[[[[-1.125, 0.28125, 0.5625], [0.484375, 0.921875, -0.7578125]], [[0.1875, -0.5625, 1.5], [0.09375, 1.46875, -0.953125]]]]> : tensor<1x2x2x3xf32>
  %e2 = arith.constant dense<[[[[-0.844743964, 0.3280407196, 0.06118463916], [0.4226827941, 0.7355932165, -0.6956405507]], [[0.2959769953, -0.6984922121, 1.134735869], [0.1347052804, 1.303677203, -1.046898281]]]]> : tensor<1x2x2x3xf32>
  %e3 = arith.constant dense<[[[[-0.8447086501, 0.3280792808, 0.06102050476], [0.4225958946, 0.7355049387, -0.6955528991]], [[0.2959669914, -0.6984450905, 1.134595009], [0.1344778341, 1.303569041, -1.047052809]]]]> : tensor<1x2x2x3xf32>
  %e4 = arith.constant dense<[[[[-0.7768136377, 0.3596268927, -0.1229021293], [0.3515365758, 0.6527162326, -0.6203472502]], [[0.3031330878, -0.672260507, 0.9856024453], [0.02388713475, 1.217201827, -1.152474681]]]]> : tensor<1x2x2x3xf32>
  %e5 = arith.constant dense<[[[[-1.981556685, 0.5644337122, 0.7773679438], [1.050934762, 1.736723258, -1.617498965]], [[0.5338014944, -1.442799311, 2.784331849], [0.3275237078, 2.85958508, -1.930802931]]]]> : tensor<1x2x2x3xf32>
  return %e0, %e1, %e2, %e3, %e4, %e5 : tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>
}
func.func @hand() -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) {
  %q = arith.constant dense<[[[[0.5, -1.0], [1.0, 0.25]], [[-0.75, 0.5], [2.0, -1.5]]]]> : tensor<1x2x2x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.5], [-0.5, 1.0]], [[0.25, -1.0], [1.5, 0.5]], [[-1.5, 0.75], [0.5, -0.25]]]]> : tensor<1x3x2x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0, -1.0], [0.5, -0.5, 1.5]], [[-2.0, 0.5, 1.0], [1.0, 1.0, -1.0]], [[0.25, -0.75, 2.0], [-1.5, 0.5, 0.25]]]]> : tensor<1x3x2x3xf32>
  %o0 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<identity>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o1 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o2 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o3 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o4 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o5 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  return %o0, %o1, %o2, %o3, %o4, %o5 : tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>
}
// Negative: gelu (erf) and gelu_tanh differ by ~1e-4 here, more than the
// tolerance, so the check tells them apart.
func.func @hand_gelus_swapped() -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) {
  %q = arith.constant dense<[[[[0.5, -1.0], [1.0, 0.25]], [[-0.75, 0.5], [2.0, -1.5]]]]> : tensor<1x2x2x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.5], [-0.5, 1.0]], [[0.25, -1.0], [1.5, 0.5]], [[-1.5, 0.75], [0.5, -0.25]]]]> : tensor<1x3x2x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0, -1.0], [0.5, -0.5, 1.5]], [[-2.0, 0.5, 1.0], [1.0, 1.0, -1.0]], [[0.25, -0.75, 2.0], [-1.5, 0.5, 0.25]]]]> : tensor<1x3x2x3xf32>
  %o0 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<identity>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o1 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o2 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o3 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o4 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 5.0e-01 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  %o5 = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<1x2x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x3xf32> -> tensor<1x2x2x3xf32>
  return %o0, %o1, %o2, %o3, %o4, %o5 : tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>
}

// An independent formulation in linalg on random inputs: B = 2, Lq = 8,
// Lkv = 12, H = 2, D = 16, Dv = 8, scale 0.25.
#q5 = affine_map<(b, h, i, j, d) -> (b, i, h, d)>
#k5 = affine_map<(b, h, i, j, d) -> (b, j, h, d)>
#s5 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p5 = affine_map<(b, i, h, e, j) -> (b, h, i, j)>
#v5 = affine_map<(b, i, h, e, j) -> (b, j, h, e)>
#o5 = affine_map<(b, i, h, e, j) -> (b, i, h, e)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @lin_scores(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>) -> tensor<2x2x8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 2.5e-01 : f32
  %e = tensor.empty() : tensor<2x2x8x12xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x8x12xf32>) -> tensor<2x2x8x12xf32>
  %s = linalg.generic {indexing_maps = [#q5, #k5, #s5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>) outs(%acc : tensor<2x2x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %o, %p : f32
    linalg.yield %t : f32
  } -> tensor<2x2x8x12xf32>
  %st = tensor.splat %scale : tensor<2x2x8x12xf32>
  %r = arith.mulf %s, %st : tensor<2x2x8x12xf32>
  return %r : tensor<2x2x8x12xf32>
}
func.func private @lin_apply(%p: tensor<2x2x8x12xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x2x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x2x8xf32>) -> tensor<2x8x2x8xf32>
  %o = linalg.generic {indexing_maps = [#p5, #v5, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x2x8x12xf32>, tensor<2x12x2x8xf32>) outs(%acc : tensor<2x8x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  } -> tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}
// silu(s) = s / (1 + exp(-s)), on tensors.
func.func @linalg_silu(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %s = call @lin_scores(%q, %k) : (tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>) -> tensor<2x2x8x12xf32>
  %one = arith.constant dense<1.0> : tensor<2x2x8x12xf32>
  %ns = arith.negf %s : tensor<2x2x8x12xf32>
  %ex = math.exp %ns : tensor<2x2x8x12xf32>
  %den = arith.addf %one, %ex : tensor<2x2x8x12xf32>
  %p = arith.divf %s, %den : tensor<2x2x8x12xf32>
  %o = call @lin_apply(%p, %v) : (tensor<2x2x8x12xf32>, tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}
func.func @fusion_silu(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>, tensor<2x12x2x8xf32> -> tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}
// Negative: the scale multiplies the scores before the activation; scaling the
// output afterwards (0.25 * silu(s) instead of silu(0.25 s)) is different.
func.func @fusion_silu_scale_after(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>, tensor<2x12x2x8xf32> -> tensor<2x8x2x8xf32>
  %c = arith.constant dense<2.5e-01> : tensor<2x8x2x8xf32>
  %r = arith.mulf %o, %c : tensor<2x8x2x8xf32>
  return %r : tensor<2x8x2x8xf32>
}
// Dynamic shapes lower to the same computation.
func.func @fusion_silu_dynamic(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %qd = tensor.cast %q : tensor<2x8x2x16xf32> to tensor<?x?x2x?xf32>
  %kd = tensor.cast %k : tensor<2x12x2x16xf32> to tensor<?x?x?x16xf32>
  %vd = tensor.cast %v : tensor<2x12x2x8xf32> to tensor<?x12x2x?xf32>
  %o = fusion.gdpa %qd, %kd, %vd {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32}
      : tensor<?x?x2x?xf32>, tensor<?x?x?x16xf32>, tensor<?x12x2x?xf32> -> tensor<?x?x2x?xf32>
  %os = tensor.cast %o : tensor<?x?x2x?xf32> to tensor<2x8x2x8xf32>
  return %os : tensor<2x8x2x8xf32>
}

// gelu_tanh(s) = 0.5 s (1 + tanh(sqrt(2/pi) (s + 0.044715 s^3))), in a generic.
func.func @linalg_gelu_tanh(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %s = call @lin_scores(%q, %k) : (tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>) -> tensor<2x2x8x12xf32>
  %e = tensor.empty() : tensor<2x2x8x12xf32>
  %p = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x2x8x12xf32>) outs(%e : tensor<2x2x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.044715 : f32
    %r = arith.constant 0.7978845608 : f32
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %x2 = arith.mulf %x, %x : f32
    %x3 = arith.mulf %x2, %x : f32
    %cx3 = arith.mulf %c, %x3 : f32
    %u = arith.addf %x, %cx3 : f32
    %ru = arith.mulf %r, %u : f32
    %t = math.tanh %ru : f32
    %t1 = arith.addf %one, %t : f32
    %hx = arith.mulf %half, %x : f32
    %y = arith.mulf %hx, %t1 : f32
    linalg.yield %y : f32
  } -> tensor<2x2x8x12xf32>
  %o = call @lin_apply(%p, %v) : (tensor<2x2x8x12xf32>, tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}
func.func @fusion_gelu_tanh(%q: tensor<2x8x2x16xf32>, %k: tensor<2x12x2x16xf32>, %v: tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 2.5e-01 : f32}
      : tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>, tensor<2x12x2x8xf32> -> tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}

// bf16 and f16: f32 arithmetic on the extended inputs, rounded once.
func.func @linalg_silu_bf16(%q: tensor<2x8x2x16xbf16>, %k: tensor<2x12x2x16xbf16>, %v: tensor<2x12x2x8xbf16>) -> tensor<2x8x2x8xbf16> {
  %qf = arith.extf %q : tensor<2x8x2x16xbf16> to tensor<2x8x2x16xf32>
  %kf = arith.extf %k : tensor<2x12x2x16xbf16> to tensor<2x12x2x16xf32>
  %vf = arith.extf %v : tensor<2x12x2x8xbf16> to tensor<2x12x2x8xf32>
  %o = call @linalg_silu(%qf, %kf, %vf) : (tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>, tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32>
  %ob = arith.truncf %o : tensor<2x8x2x8xf32> to tensor<2x8x2x8xbf16>
  return %ob : tensor<2x8x2x8xbf16>
}
func.func @fusion_silu_bf16(%q: tensor<2x8x2x16xbf16>, %k: tensor<2x12x2x16xbf16>, %v: tensor<2x12x2x8xbf16>) -> tensor<2x8x2x8xbf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32}
      : tensor<2x8x2x16xbf16>, tensor<2x12x2x16xbf16>, tensor<2x12x2x8xbf16> -> tensor<2x8x2x8xbf16>
  return %o : tensor<2x8x2x8xbf16>
}
func.func @linalg_silu_f16(%q: tensor<2x8x2x16xf16>, %k: tensor<2x12x2x16xf16>, %v: tensor<2x12x2x8xf16>) -> tensor<2x8x2x8xf16> {
  %qf = arith.extf %q : tensor<2x8x2x16xf16> to tensor<2x8x2x16xf32>
  %kf = arith.extf %k : tensor<2x12x2x16xf16> to tensor<2x12x2x16xf32>
  %vf = arith.extf %v : tensor<2x12x2x8xf16> to tensor<2x12x2x8xf32>
  %o = call @linalg_silu(%qf, %kf, %vf) : (tensor<2x8x2x16xf32>, tensor<2x12x2x16xf32>, tensor<2x12x2x8xf32>) -> tensor<2x8x2x8xf32>
  %oh = arith.truncf %o : tensor<2x8x2x8xf32> to tensor<2x8x2x8xf16>
  return %oh : tensor<2x8x2x8xf16>
}
func.func @fusion_silu_f16(%q: tensor<2x8x2x16xf16>, %k: tensor<2x12x2x16xf16>, %v: tensor<2x12x2x8xf16>) -> tensor<2x8x2x8xf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 2.5e-01 : f32}
      : tensor<2x8x2x16xf16>, tensor<2x12x2x16xf16>, tensor<2x12x2x8xf16> -> tensor<2x8x2x8xf16>
  return %o : tensor<2x8x2x8xf16>
}
