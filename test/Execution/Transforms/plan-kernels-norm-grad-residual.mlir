// fusion-plan-kernels' fold of a residual gradient's fusion.add into the
// norm gradient (its residual operand) keeps the program's values: each
// function runs on the CPU on the same random inputs before and after. In
// f32 the values are the same; in bf16 the folded form rounds dx + residual
// once where the add rounded dx first (within a bf16 ulp of the sum).
// RUN: fusion-runner %s -e rms_through_expand_bf16 --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e ln_other_later_f32 --after-passes=fusion-plan-kernels --atol=1e-6 --rtol=1e-6 | FileCheck %s
// RUN: fusion-runner %s -e ln_through_collapse_f32 --after-passes=fusion-plan-kernels --atol=1e-6 --rtol=1e-6 | FileCheck %s
// RUN: fusion-runner %s -e rms_f32_residual_lhs_bf16 --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=1e-2 | FileCheck %s
// The rewrite happened, in every function (and the wrong fold below has its
// residual from the start):
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the residual on the wrong side of a
// transpose-like reshape (the heads swapped) differs.
// RUN: not fusion-runner %s -e ln_through_collapse_f32 --compare=ln_through_collapse_f32_wrong --atol=1e-6 --rtol=1e-6 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-5: residual(
// IR-NOT: fusion.add

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// The attention block's form: dx over [B, L, H * D] expanded to heads, the
// output gradient added.
func.func @rms_through_expand_bf16(%dy: tensor<2x8x128xbf16>, %x: tensor<2x8x128xbf16>, %rstd: tensor<2x8xf32>,
                                   %w: tensor<128xbf16>, %dout: tensor<2x8x2x64xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<128xf32>) {
  %dxf, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<128xbf16>)
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>
  %dx0 = tensor.expand_shape %dxf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dx = fusion.add %dx0, %dout : tensor<2x8x2x64xbf16>
  return %dx, %dw : tensor<2x8x2x64xbf16>, tensor<128xf32>
}

// The residual gradient computed after the norm gradient (which moves down).
func.func @ln_other_later_f32(%dy: tensor<16x96xf32>, %x: tensor<16x96xf32>, %m: tensor<16xf32>, %r: tensor<16xf32>,
                              %w: tensor<96xf32>, %a: tensor<16x96xf32>, %s: tensor<16x1xf32>)
    -> (tensor<16x96xf32>, tensor<96xf32>, tensor<96xf32>) {
  %dx0, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<96xf32>) {with_bias_grad}
      : tensor<16x96xf32>, tensor<16x96xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<16x96xf32>, tensor<96xf32>, tensor<96xf32>
  %res = fusion.mul %a, %s : tensor<16x96xf32>, tensor<16x1xf32>
  %dx = fusion.add %res, %dx0 : tensor<16x96xf32>
  return %dx, %dw, %db : tensor<16x96xf32>, tensor<96xf32>, tensor<96xf32>
}

// A norm over [B, L, H] added on the flattened tokens [B * L, H].
func.func @ln_through_collapse_f32(%dy: tensor<2x8x64xf32>, %x: tensor<2x8x64xf32>, %m: tensor<2x8xf32>, %r: tensor<2x8xf32>,
                                   %res: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %dx0 = fusion.layer_norm_grad %dy, %x, %m, %r
      : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8x64xf32>
  %flat = tensor.collapse_shape %dx0 [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
  %dx = fusion.add %flat, %res : tensor<16x64xf32>
  return %dx : tensor<16x64xf32>
}

// bf16 data, an f32 residual gradient.
func.func @rms_f32_residual_lhs_bf16(%dy: tensor<32x256xbf16>, %x: tensor<32x256xbf16>, %rstd: tensor<32xf32>,
                                     %res: tensor<32x256xf32>) -> tensor<32x256xbf16> {
  %dx0 = fusion.rms_norm_grad %dy, %x, %rstd : tensor<32x256xbf16>, tensor<32x256xbf16>, tensor<32xf32> -> tensor<32x256xbf16>
  %dx = fusion.add %dx0, %res : tensor<32x256xbf16>, tensor<32x256xf32>
  return %dx : tensor<32x256xbf16>
}

// A wrong fold: the residual's rows taken in another order than dx's (what a
// fold that reshaped the other operand wrongly would compute).
func.func @ln_through_collapse_f32_wrong(%dy: tensor<2x8x64xf32>, %x: tensor<2x8x64xf32>, %m: tensor<2x8xf32>,
                                         %r: tensor<2x8xf32>, %res: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %rese = tensor.expand_shape %res [[0, 1], [2]] output_shape [8, 2, 64] : tensor<16x64xf32> into tensor<8x2x64xf32>
  %rest = linalg.transpose ins(%rese : tensor<8x2x64xf32>) outs(%dy : tensor<2x8x64xf32>) permutation = [1, 0, 2]
  %dx = fusion.layer_norm_grad %dy, %x, %m, %r residual(%rest : tensor<2x8x64xf32>)
      : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8x64xf32>
  %flat = tensor.collapse_shape %dx [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
  return %flat : tensor<16x64xf32>
}
}
