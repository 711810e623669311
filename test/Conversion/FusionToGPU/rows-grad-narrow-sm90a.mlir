// The norm-gradient dx kernel of rows narrower than 96 vectors of 8 bf16
// columns (RowSpec.cpp, shapeNormGrad): whole warps per row (192: one warp,
// 24 vectors over 32 lanes, 8 rows per CTA of 256 threads; 384 RMSNorm: two
// warps, 48 vectors over 64 lanes, 4 rows per CTA), not the 8- or 16-thread
// groups of three vectors each that would share a warp:
// the loop over a group's rows runs the warp's xor shuffles, and groups of
// one warp may take different numbers of rows (M = 302 at 192 columns hung
// on the H200 that way, session 23).
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

// PTXAS-DAG: ptxas ok: ln_grad_192_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_grad_384_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// CHECK-LABEL: func.func @ln_grad_192(
// CHECK: arith.ceildivui %{{.*}}, %c8
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_192_kernel0 {{.*}} threads in (%c256, %c1, %c1)
func.func @ln_grad_192(%dy: tensor<?x192xbf16>, %x: tensor<?x192xbf16>, %m: tensor<?xf32>, %r: tensor<?xf32>, %w: tensor<192xbf16>)
    -> (tensor<?x192xbf16>, tensor<192xf32>, tensor<192xf32>) {
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %m, %r weight(%w : tensor<192xbf16>) {with_bias_grad}
      : tensor<?x192xbf16>, tensor<?x192xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x192xbf16>, tensor<192xf32>, tensor<192xf32>
  return %dx, %dw, %db : tensor<?x192xbf16>, tensor<192xf32>, tensor<192xf32>
}

// CHECK-LABEL: func.func @rms_grad_384(
// CHECK: arith.ceildivui %{{.*}}, %c4
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_grad_384_kernel0 {{.*}} threads in (%c256, %c1, %c1)
func.func @rms_grad_384(%dy: tensor<?x384xbf16>, %x: tensor<?x384xbf16>, %r: tensor<?xf32>, %w: tensor<384xbf16>)
    -> (tensor<?x384xbf16>, tensor<384xf32>) {
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %r weight(%w : tensor<384xbf16>)
      : tensor<?x384xbf16>, tensor<?x384xbf16>, tensor<?xf32> -> tensor<?x384xbf16>, tensor<384xf32>
  return %dx, %dw : tensor<?x384xbf16>, tensor<384xf32>
}

}
