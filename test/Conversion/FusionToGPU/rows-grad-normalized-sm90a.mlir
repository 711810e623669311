// REQUIRES: ptxas
// The row family's RMSNorm gradient reading x_hat (normalized_input, what
// fusion-fold-norm-weight leaves a training step): the same kernels, the
// row's values taken as x_hat (no multiply by rstd before the sums or dx;
// c2 = sum(g x_hat) / N), for the one-CTA rows of 1024 and the wide rows of
// 4096; run on an H100 in session 54's training steps. Every kernel
// assembles without spills.
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// PTXAS-DAG: ptxas ok: xhat_1024_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: xhat_1024_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: xhat_4096_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: xhat_4096_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED
// The row sum's c2 is the group total over N, not times rstd first:
// CHECK-LABEL: gpu.func @xhat_1024_kernel0(
// CHECK: %[[T:.*]] = arith.addf %{{.*}}, %shuffleResult_13 : f32
// CHECK-NEXT: %[[C2:.*]] = arith.divf %[[T]], %cst{{.*}} : f32
// CHECK-NEXT: %[[K2:.*]] = arith.mulf %{{.*}}, %[[C2]] : f32
// CHECK-NEXT: arith.negf %[[K2]] : f32
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @xhat_1024(%dn: tensor<?x1024xbf16>, %xh: tensor<?x1024xbf16>, %r: tensor<?xf32>, %g: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<1024xf32>) {
  %dh, %dg = fusion.rms_norm_grad %dn, %xh, %r weight(%g : tensor<1024xbf16>) {normalized_input}
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %dh, %dg : tensor<?x1024xbf16>, tensor<1024xf32>
}
func.func @xhat_4096(%dn: tensor<?x4096xbf16>, %xh: tensor<?x4096xbf16>, %r: tensor<?xf32>, %g: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xf32>) {
  %dh, %dg = fusion.rms_norm_grad %dn, %xh, %r weight(%g : tensor<4096xbf16>) {normalized_input}
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?xf32> -> tensor<?x4096xbf16>, tensor<4096xf32>
  return %dh, %dg : tensor<?x4096xbf16>, tensor<4096xf32>
}
}
