// Reference semantics of fusion.rms_norm_grad on the CPU: against central
// finite differences, precomputed in float64 for fixed inputs, and as a
// directional derivative of fusion.rms_norm on random f32 inputs; with a
// residual, dx + residual in f32 rounded once.
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e fd --compare=analytic --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fd --compare=analytic --seed=7 --input-range=-2,2 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e f32_grad_bf16 --compare=fusion_grad_bf16 --atol=2e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fusion_grad_static --compare=fusion_grad_dynamic --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e f32_grad_plus_residual --compare=fusion_grad_residual --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e f32_grad_plus_residual --compare=fusion_grad_then_add --atol=0 --rtol=0 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e fd --compare=analytic_weight_dropped --atol=1e-2 --rtol=1e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Central differences of sum(dy * rms_norm(x, w)) in float64
// (Inputs/hand_values.py rms_norm_grad): x [[3, 4, -1], [1, -2, 0.5]],
// dy [[0.5, -1, 2], [1.5, 0.25, -0.75]], w [2, 0.5, -1], eps 1e-5; then the
// same without weight. rstd comes from the forward op.
func.func @expected() -> (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %dx = arith.constant dense<[[0.2221005027, -0.326618006, -0.6401716912], [1.817826509, 0.9943985466, 0.3419681651]]> : tensor<2x3xf32>
  %dw = arith.constant dense<[1.643414551, -1.73669505, -0.9628383733]> : tensor<3xf32>
  %dx2 = arith.constant dense<[[0.3462150746, -0.1045180913, 0.6205746226], [1.043899409, 0.3689632363, -0.6119404745]]> : tensor<2x3xf32>
  return %dx, %dw, %dx2 : tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>
}
func.func @hand() -> (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %x = arith.constant dense<[[3.0, 4.0, -1.0], [1.0, -2.0, 0.5]]> : tensor<2x3xf32>
  %dy = arith.constant dense<[[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]> : tensor<2x3xf32>
  %w = arith.constant dense<[2.0, 0.5, -1.0]> : tensor<3xf32>
  %y, %r = fusion.rms_norm %x weight(%w : tensor<3xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<2x3xf32> -> tensor<2x3xf32>, tensor<2xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<3xf32>)
      : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>, tensor<3xf32>
  %dx2 = fusion.rms_norm_grad %dy, %x, %r
      : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return %dx, %dw, %dx2 : tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>
}

// Directional derivatives on random inputs, h = 1e-2:
//   fd       = [sum(dy * (f(x + h ux, w) - f(x - h ux, w))) / 2h,
//               sum(dy * (f(x, w + h uw) - f(x, w - h uw))) / 2h]
//   analytic = [sum(dx * ux), sum(dw * uw)]
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
func.func private @fwd(%x: tensor<8x32xf32>, %w: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = fusion.rms_norm %x weight(%w : tensor<32xf32>) {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
func.func @fd(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %dy: tensor<8x32xf32>, %ux: tensor<8x32xf32>, %uw: tensor<32xf32>) -> tensor<2xf32> {
  %h = arith.constant 1.0e-02 : f32
  %inv2h = arith.constant 50.0 : f32
  %hx = tensor.splat %h : tensor<8x32xf32>
  %hw = tensor.splat %h : tensor<32xf32>
  %sx = arith.mulf %ux, %hx : tensor<8x32xf32>
  %sw = arith.mulf %uw, %hw : tensor<32xf32>
  %xp = arith.addf %x, %sx : tensor<8x32xf32>
  %xm = arith.subf %x, %sx : tensor<8x32xf32>
  %wp = arith.addf %w, %sw : tensor<32xf32>
  %wm = arith.subf %w, %sw : tensor<32xf32>
  %y1 = call @fwd(%xp, %w) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y2 = call @fwd(%xm, %w) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y3 = call @fwd(%x, %wp) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y4 = call @fwd(%x, %wm) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %d1 = arith.subf %y1, %y2 : tensor<8x32xf32>
  %d2 = arith.subf %y3, %y4 : tensor<8x32xf32>
  %a = call @dot2(%dy, %d1) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %b = call @dot2(%dy, %d2) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %as = arith.mulf %a, %inv2h : f32
  %bs = arith.mulf %b, %inv2h : f32
  %r = tensor.from_elements %as, %bs : tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func @analytic(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %dy: tensor<8x32xf32>, %ux: tensor<8x32xf32>, %uw: tensor<32xf32>) -> tensor<2xf32> {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<32xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<32xf32>)
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>
  %a = call @dot2(%dx, %ux) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %b = call @dot1(%dw, %uw) : (tensor<32xf32>, tensor<32xf32>) -> f32
  %res = tensor.from_elements %a, %b : tensor<2xf32>
  return %res : tensor<2xf32>
}
// Negative: dx must see the weight (g = dy * weight); dropping it breaks the
// x-derivative.
func.func @analytic_weight_dropped(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %dy: tensor<8x32xf32>, %ux: tensor<8x32xf32>, %uw: tensor<32xf32>) -> tensor<2xf32> {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<32xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %dx0, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<32xf32>)
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>
  %dx = fusion.rms_norm_grad %dy, %x, %r
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<8x32xf32>
  %a = call @dot2(%dx, %ux) : (tensor<8x32xf32>, tensor<8x32xf32>) -> f32
  %b = call @dot1(%dw, %uw) : (tensor<32xf32>, tensor<32xf32>) -> f32
  %res = tensor.from_elements %a, %b : tensor<2xf32>
  return %res : tensor<2xf32>
}

// bf16 dy, x, weight: all arithmetic in f32, dx rounded once to bf16; the
// reference runs the f32 op on the extended inputs and rounds.
func.func @f32_grad_bf16(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>, %w: tensor<32xbf16>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %dyf = arith.extf %dy : tensor<8x32xbf16> to tensor<8x32xf32>
  %xf = arith.extf %x : tensor<8x32xbf16> to tensor<8x32xf32>
  %wf = arith.extf %w : tensor<32xbf16> to tensor<32xf32>
  %y, %r = fusion.rms_norm %xf {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %dx, %dw = fusion.rms_norm_grad %dyf, %xf, %r weight(%wf : tensor<32xf32>)
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>
  %dxb = arith.truncf %dx : tensor<8x32xf32> to tensor<8x32xbf16>
  return %dxb, %dw : tensor<8x32xbf16>, tensor<32xf32>
}
func.func @fusion_grad_bf16(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>, %w: tensor<32xbf16>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<8xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<32xbf16>)
      : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8xf32> -> tensor<8x32xbf16>, tensor<32xf32>
  return %dx, %dw : tensor<8x32xbf16>, tensor<32xf32>
}

// Dynamic shapes lower to the same computation.
func.func @fusion_grad_static(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>, %w: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>) {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<32xf32>)
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>
  return %dx, %dw : tensor<8x32xf32>, tensor<32xf32>
}
func.func @fusion_grad_dynamic(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>, %w: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>) {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %dyd = tensor.cast %dy : tensor<8x32xf32> to tensor<?x?xf32>
  %xd = tensor.cast %x : tensor<8x32xf32> to tensor<?x?xf32>
  %rd = tensor.cast %r : tensor<8xf32> to tensor<?xf32>
  %wd = tensor.cast %w : tensor<32xf32> to tensor<?xf32>
  %dx, %dw = fusion.rms_norm_grad %dyd, %xd, %rd weight(%wd : tensor<?xf32>)
      : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32> -> tensor<?x?xf32>, tensor<?xf32>
  %dxs = tensor.cast %dx : tensor<?x?xf32> to tensor<8x32xf32>
  %dws = tensor.cast %dw : tensor<?xf32> to tensor<32xf32>
  return %dxs, %dws : tensor<8x32xf32>, tensor<32xf32>
}

// The residual: dx = the gradient + residual in f32, rounded once to dx's
// bf16 (here an f32 residual), exactly the f32 computation rounded at the
// end; a separate add (the gradient rounded to bf16 first, then the sum)
// is not (the second FAIL run above: it rounds twice).
func.func @f32_grad_plus_residual(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>, %w: tensor<32xbf16>,
                                  %res: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %dyf = arith.extf %dy : tensor<8x32xbf16> to tensor<8x32xf32>
  %xf = arith.extf %x : tensor<8x32xbf16> to tensor<8x32xf32>
  %wf = arith.extf %w : tensor<32xbf16> to tensor<32xf32>
  %y, %r = fusion.rms_norm %xf {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %dx, %dw = fusion.rms_norm_grad %dyf, %xf, %r weight(%wf : tensor<32xf32>)
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<8x32xf32>, tensor<32xf32>
  %sum = fusion.add %dx, %res : tensor<8x32xf32>
  %dxb = arith.truncf %sum : tensor<8x32xf32> to tensor<8x32xbf16>
  return %dxb, %dw : tensor<8x32xbf16>, tensor<32xf32>
}
func.func @fusion_grad_residual(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>, %w: tensor<32xbf16>,
                                %res: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<8xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<32xbf16>) residual(%res : tensor<8x32xf32>)
      : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8xf32> -> tensor<8x32xbf16>, tensor<32xf32>
  return %dx, %dw : tensor<8x32xbf16>, tensor<32xf32>
}
func.func @fusion_grad_then_add(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>, %w: tensor<32xbf16>,
                                %res: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<8xf32>
  %dx0, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<32xbf16>)
      : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8xf32> -> tensor<8x32xbf16>, tensor<32xf32>
  %dx = fusion.add %dx0, %res : tensor<8x32xbf16>, tensor<8x32xf32>
  return %dx, %dw : tensor<8x32xbf16>, tensor<32xf32>
}
