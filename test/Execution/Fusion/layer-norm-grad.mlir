// Reference semantics of fusion.layer_norm_grad on the CPU: against central
// finite differences, precomputed in float64 for fixed inputs, and as a
// directional derivative of fusion.layer_norm on random f32 inputs; with a
// residual, dx + residual in f32 rounded once.
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e fd --compare=analytic --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fd --compare=analytic --seed=3 --input-offset=0.5 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e f32_grad_f16 --compare=fusion_grad_f16 --atol=2e-3 --rtol=2e-3 | FileCheck %s
// RUN: fusion-runner %s -e f32_grad_plus_residual --compare=fusion_grad_residual --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e fusion_grad_residual_static --compare=fusion_grad_residual_dynamic --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e fd --compare=analytic_mean_dropped --atol=1e-2 --rtol=1e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Central differences of sum(dy * layer_norm(x, w, b)) in float64
// (Inputs/hand_values.py layer_norm_grad): x [[1, 2, 4, -0.5], [-1, 0.5, 3, 2]],
// dy [[0.5, -1, 2, 0.25], [1.5, 0.25, -0.75, -2]], w [1.5, -0.5, 2, 0.75],
// b [0.1, 0.2, -0.3, 0.4], eps 1e-5; then dx without weight. Mean and rstd
// come from the forward op.
func.func @expected() -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>) {
  %dx = arith.constant dense<[[-0.05724320751, -0.7150774053, 0.416350781, 0.3559698283], [0.2816669001, -0.334400618, 0.3433744118, -0.2906406935]]> : tensor<2x4xf32>
  %dw = arith.constant dense<[-2.294379394, -0.3325133425, 1.97804485, -1.479703039]> : tensor<4xf32>
  %db = arith.constant dense<[2.0, -0.75, 1.25, -1.75]> : tensor<4xf32>
  %dx2 = arith.constant dense<[[0.1645703493, -0.9552260141, 0.4758261318, 0.3148295311], [0.1627168684, 0.03815455796, 0.5453637695, -0.7462351959]]> : tensor<2x4xf32>
  return %dx, %dw, %db, %dx2, %db : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>
}
func.func @hand() -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>) {
  %x = arith.constant dense<[[1.0, 2.0, 4.0, -0.5], [-1.0, 0.5, 3.0, 2.0]]> : tensor<2x4xf32>
  %dy = arith.constant dense<[[0.5, -1.0, 2.0, 0.25], [1.5, 0.25, -0.75, -2.0]]> : tensor<2x4xf32>
  %w = arith.constant dense<[1.5, -0.5, 2.0, 0.75]> : tensor<4xf32>
  %b = arith.constant dense<[0.1, 0.2, -0.3, 0.4]> : tensor<4xf32>
  %y, %m, %r = fusion.layer_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<2x4xf32> -> tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<4xf32>) {with_bias_grad}
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  // No weight, bias gradient only.
  %dx2, %db2 = fusion.layer_norm_grad %dy, %x, %m, %r {with_bias_grad}
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x4xf32>, tensor<4xf32>
  return %dx, %dw, %db, %dx2, %db2 : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>
}

// Directional derivatives on random inputs, h = 1e-2, along ux, uw, ub
// separately: fd = sum(dy * (f(+h) - f(-h))) / 2h, analytic = sum(grad * u).
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
func.func private @dot2(%a: tensor<8x32xf32>, %b: tensor<8x32xf32>) -> f32 {
  %af = tensor.collapse_shape %a [[0, 1]] : tensor<8x32xf32> into tensor<256xf32>
  %bf = tensor.collapse_shape %b [[0, 1]] : tensor<8x32xf32> into tensor<256xf32>
  %ad = tensor.cast %af : tensor<256xf32> to tensor<?xf32>
  %bd = tensor.cast %bf : tensor<256xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @dot1(%a: tensor<32xf32>, %b: tensor<32xf32>) -> f32 {
  %ad = tensor.cast %a : tensor<32xf32> to tensor<?xf32>
  %bd = tensor.cast %b : tensor<32xf32> to tensor<?xf32>
  %r = call @dot(%ad, %bd) : (tensor<?xf32>, tensor<?xf32>) -> f32
  return %r : f32
}
func.func private @fwd(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y, %m, %r = fusion.layer_norm %x weight(%w : tensor<32xf32>) bias(%b : tensor<32xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<8x32xf32>
}
func.func @fd(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>, %ux: tensor<8x32xf32>, %uw: tensor<32xf32>, %ub: tensor<32xf32>) -> tensor<3xf32> {
  %inv2h = arith.constant 50.0 : f32
  %hx = arith.constant dense<1.0e-02> : tensor<8x32xf32>
  %hv = arith.constant dense<1.0e-02> : tensor<32xf32>
  %sx = arith.mulf %ux, %hx : tensor<8x32xf32>
  %sw = arith.mulf %uw, %hv : tensor<32xf32>
  %sb = arith.mulf %ub, %hv : tensor<32xf32>
  %xp = arith.addf %x, %sx : tensor<8x32xf32>
  %xm = arith.subf %x, %sx : tensor<8x32xf32>
  %wp = arith.addf %w, %sw : tensor<32xf32>
  %wm = arith.subf %w, %sw : tensor<32xf32>
  %bp = arith.addf %b, %sb : tensor<32xf32>
  %bm = arith.subf %b, %sb : tensor<32xf32>
  %y1 = call @fwd(%xp, %w, %b) : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y2 = call @fwd(%xm, %w, %b) : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y3 = call @fwd(%x, %wp, %b) : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y4 = call @fwd(%x, %wm, %b) : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y5 = call @fwd(%x, %w, %bp) : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y6 = call @fwd(%x, %w, %bm) : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %d1 = arith.subf %y1, %y2 : tensor<8x32xf32>
  %d2 = arith.subf %y3, %y4 : tensor<8x32xf32>
  %d3 = arith.subf %y5, %y6 : tensor<8x32xf32>
  %a1 = call @dot2(%dy, %d1) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %a2 = call @dot2(%dy, %d2) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %a3 = call @dot2(%dy, %d3) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %s1 = arith.mulf %a1, %inv2h : f32
  %s2 = arith.mulf %a2, %inv2h : f32
  %s3 = arith.mulf %a3, %inv2h : f32
  %r = tensor.from_elements %s1, %s2, %s3 : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @analytic(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>, %ux: tensor<8x32xf32>, %uw: tensor<32xf32>, %ub: tensor<32xf32>) -> tensor<3xf32> {
  %y, %m, %r = fusion.layer_norm %x weight(%w : tensor<32xf32>) bias(%b : tensor<32xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<32xf32>) {with_bias_grad}
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %a1 = call @dot2(%dx, %ux) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %a2 = call @dot1(%dw, %uw) : (tensor<32xf32>, tensor<32xf32>) -> f32
  %a3 = call @dot1(%db, %ub) : (tensor<32xf32>, tensor<32xf32>) -> f32
  %res = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %res : tensor<3xf32>
}
// Negative: the saved mean matters; passing zeros for it breaks dx and dw.
func.func @analytic_mean_dropped(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>, %ux: tensor<8x32xf32>, %uw: tensor<32xf32>, %ub: tensor<32xf32>) -> tensor<3xf32> {
  %y, %m, %r = fusion.layer_norm %x weight(%w : tensor<32xf32>) bias(%b : tensor<32xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %z = arith.constant dense<0.0> : tensor<8xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %z, %r weight(%w : tensor<32xf32>) {with_bias_grad}
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %a1 = call @dot2(%dx, %ux) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %a2 = call @dot1(%dw, %uw) : (tensor<32xf32>, tensor<32xf32>) -> f32
  %a3 = call @dot1(%db, %ub) : (tensor<32xf32>, tensor<32xf32>) -> f32
  %res = tensor.from_elements %a1, %a2, %a3 : tensor<3xf32>
  return %res : tensor<3xf32>
}

// f16 dy, x, weight: f32 arithmetic, dx rounded once to f16; the reference
// runs the f32 op on the extended inputs and rounds.
func.func @f32_grad_f16(%dy: tensor<8x32xf16>, %x: tensor<8x32xf16>, %w: tensor<32xf16>) -> (tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>) {
  %dyf = arith.extf %dy : tensor<8x32xf16> to tensor<8x32xf32>
  %xf = arith.extf %x : tensor<8x32xf16> to tensor<8x32xf32>
  %wf = arith.extf %w : tensor<32xf16> to tensor<32xf32>
  %y, %m, %r = fusion.layer_norm %xf {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dyf, %xf, %m, %r weight(%wf : tensor<32xf32>) {with_bias_grad}
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %dxh = arith.truncf %dx : tensor<8x32xf32> to tensor<8x32xf16>
  return %dxh, %dw, %db : tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>
}
func.func @fusion_grad_f16(%dy: tensor<8x32xf16>, %x: tensor<8x32xf16>, %w: tensor<32xf16>) -> (tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>) {
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf16> -> tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<32xf16>) {with_bias_grad}
      : tensor<8x32xf16>, tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>
  return %dx, %dw, %db : tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>
}

// The residual (f16, dx's type): dx = the gradient + residual in f32, rounded
// once to f16, exactly the f32 computation rounded at the end.
func.func @f32_grad_plus_residual(%dy: tensor<8x32xf16>, %x: tensor<8x32xf16>, %w: tensor<32xf16>,
                                  %res: tensor<8x32xf16>) -> (tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>) {
  %dyf = arith.extf %dy : tensor<8x32xf16> to tensor<8x32xf32>
  %xf = arith.extf %x : tensor<8x32xf16> to tensor<8x32xf32>
  %wf = arith.extf %w : tensor<32xf16> to tensor<32xf32>
  %resf = arith.extf %res : tensor<8x32xf16> to tensor<8x32xf32>
  %y, %m, %r = fusion.layer_norm %xf {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dyf, %xf, %m, %r weight(%wf : tensor<32xf32>) {with_bias_grad}
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %sum = fusion.add %dx, %resf : tensor<8x32xf32>
  %dxh = arith.truncf %sum : tensor<8x32xf32> to tensor<8x32xf16>
  return %dxh, %dw, %db : tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>
}
func.func @fusion_grad_residual(%dy: tensor<8x32xf16>, %x: tensor<8x32xf16>, %w: tensor<32xf16>,
                                %res: tensor<8x32xf16>) -> (tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>) {
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf16> -> tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<32xf16>) residual(%res : tensor<8x32xf16>)
      {with_bias_grad}
      : tensor<8x32xf16>, tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>
  return %dx, %dw, %db : tensor<8x32xf16>, tensor<32xf32>, tensor<32xf32>
}

// With a residual, dynamic shapes lower to the same computation.
func.func @fusion_grad_residual_static(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>, %res: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r residual(%res : tensor<8x32xf32>)
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x32xf32>
  return %dx : tensor<8x32xf32>
}
func.func @fusion_grad_residual_dynamic(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>, %res: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %dyd = tensor.cast %dy : tensor<8x32xf32> to tensor<?x?xf32>
  %xd = tensor.cast %x : tensor<8x32xf32> to tensor<?x?xf32>
  %md = tensor.cast %m : tensor<8xf32> to tensor<?xf32>
  %rd = tensor.cast %r : tensor<8xf32> to tensor<?xf32>
  %resd = tensor.cast %res : tensor<8x32xf32> to tensor<?x?xf32>
  %dx = fusion.layer_norm_grad %dyd, %xd, %md, %rd residual(%resd : tensor<?x?xf32>)
      : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?x?xf32>
  %dxs = tensor.cast %dx : tensor<?x?xf32> to tensor<8x32xf32>
  return %dxs : tensor<8x32xf32>
}
