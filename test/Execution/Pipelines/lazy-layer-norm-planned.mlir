// Test that a pre-LN projection (nn.LayerNorm with weight and bias, then
// nn.Linear with bias, W [out, in]) computes the same on the CPU before and
// after fusion-fuse with the LayerNorm deferred into the GEMM
// (lazy-layer-norm) and fusion-plan-kernels, which gives the fused GEMM B's
// column sums as col_sum: a 1-row GEMM of a splat of ones with
// B = diag(gamma) W, the B the kernel multiplies (the planner takes bf16 and
// f16 GEMMs only). Random inputs, and rows with a large mean
// (--input-offset=4: every input ~4 +- 1, outputs ~1000). The unfused form
// rounds the normalized rows to bf16 before the GEMM, the fused form never
// does: observed max_abs_err 0.0625 (bf16, outputs up to ~10), 8 = one bf16
// ulp at ~1000 (offset 4, max_rel_err 7.8e-3), 7.8e-3 (f16).
// RUN: fusion-runner %s -e ln_prenorm_bf16 --after-passes='fusion-fuse{lazy-layer-norm=true},fusion-plan-kernels' --atol=1.25e-1 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e ln_prenorm_bf16 --after-passes='fusion-fuse{lazy-layer-norm=true},fusion-plan-kernels' --input-offset=4 --atol=0 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e ln_prenorm_f16 --after-passes='fusion-fuse{lazy-layer-norm=true},fusion-plan-kernels' --atol=1.6e-2 --rtol=0 | FileCheck %s
// The planned program: the ones, their GEMM with the folded B, col_sum.
// RUN: fusion-opt %s '-fusion-fuse=lazy-layer-norm=true' -fusion-plan-kernels | FileCheck %s --check-prefix=IR
// CHECK: PASS

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// IR-LABEL: func.func @ln_prenorm_bf16(
// IR-DAG: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : tensor<1x64xbf16>
// IR-DAG: %[[WG:.*]] = fusion.mul %{{.*}}, %{{.*}} : tensor<128x64xbf16>, tensor<64xbf16>
// IR: %[[SUMS:.*]] = fusion.fused_matmul %[[ONES]], %[[WG]] {{.*}}transpose_rhs
// IR-SAME: -> tensor<1x128xf32>
// IR: %[[CS:.*]] = tensor.collapse_shape %[[SUMS]]
// IR: fusion.fused_matmul %{{.*}}, %[[WG]] col_bias(%{{.*}} : tensor<128xf32>) col_sum(%[[CS]] : tensor<128xf32>)
// IR-SAME: prologue = #fusion.prologue<layer_norm>
func.func @ln_prenorm_bf16(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>,
                           %w: tensor<128x64xbf16>, %b: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xbf16>) bias(%beta : tensor<64xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w bias(%b : tensor<128xbf16>) {transpose_rhs} : tensor<32x64xbf16>, tensor<128x64xbf16> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}
// IR-LABEL: func.func @ln_prenorm_f16(
// IR: arith.constant dense<1.000000e+00> : tensor<1x64xf16>
// IR: col_sum(%{{.*}} : tensor<128xf32>)
func.func @ln_prenorm_f16(%x: tensor<32x64xf16>, %g: tensor<64xf16>, %beta: tensor<64xf16>,
                          %w: tensor<128x64xf16>, %b: tensor<128xf16>) -> tensor<32x128xf16> {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xf16>) bias(%beta : tensor<64xf16>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xf16> -> tensor<32x64xf16>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w bias(%b : tensor<128xf16>) {transpose_rhs} : tensor<32x64xf16>, tensor<128x64xf16> -> tensor<32x128xf16>
  return %y : tensor<32x128xf16>
}
}
