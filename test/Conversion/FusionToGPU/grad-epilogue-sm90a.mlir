// REQUIRES: ptxas
// Grad epilogues (backward regrouping): the norm's backward on the dgrad
// GEMM's accumulator, its row sums exchanged like a forward norm's (one
// CTA, or a cluster over DSMEM), dweight / dbias as per-warp column
// partials [params][row blocks x 8][N] in a pooled workspace, summed in
// order by <kernel>_params, then freed. Every kernel assembles; the
// weightless one-CTA kernel and the sums without spills, the weighted and
// the LayerNorm cluster kernels with a few (12 and 180 bytes today: the
// weight and the residual loaded per column group beside the tile).
// RUN: fusion-opt %s -fusion-plan-kernels -convert-fusion-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fusion-opt %s "-fusion-to-gpu=format=isa" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: rms_normalized_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_weight_kernel0 registers={{[0-9]+}} spills={{[0-9]+}}
// PTXAS-DAG: ptxas ok: rms_weight_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_cluster_kernel0 registers={{[0-9]+}} spills={{[0-9]+}}
// PTXAS-DAG: ptxas ok: ln_cluster_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

// The weightless regrouped form: x_hat read directly, no parameter grads.
// CHECK-LABEL: func.func @rms_normalized
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_normalized_kernel0
// CHECK-NOT: _params
// CHECK: return

// RMSNorm with its weight: dg from 8 partial rows per row block.
// CHECK-LABEL: func.func @rms_weight
// CHECK: %[[P:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_weight_kernel0 {{.*}}%[[P]] : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_weight_kernel0_params blocks in (%c16, %c1, %c1) threads in (%c512, %c1, %c1) {{.*}}args(%[[P]] : memref<?xf32>
// CHECK: gpu.dealloc async [%{{.*}}] %[[P]] : memref<?xf32>

// LayerNorm with weight, bias gradient and a residual, N = 1024: a cluster
// of 4 CTAs, two exchange rounds; dgamma and dbeta.
// CHECK-LABEL: func.func @ln_cluster
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0 clusters in (%c4, %c1, %c1)
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0_params blocks in (%c32, %c2, %c1)
// The kernel: the row sums exchanged with the peers (st.async), the column
// sums over a warp's rows (shuffles 4, 8, 16 apart).
// CHECK-LABEL: gpu.func @ln_cluster_kernel0
// CHECK: st.async
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_normalized(%dy: tensor<?x512xbf16>, %w: tensor<256x512xbf16>, %xh: tensor<?x256xbf16>, %r: tensor<?xf32>) -> tensor<?x256xbf16> {
  %dx = fusion.fused_matmul %dy, %w norm_input(%xh : tensor<?x256xbf16>) rstd(%r : tensor<?xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs} : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
  return %dx : tensor<?x256xbf16>
}
func.func @rms_weight(%dy: tensor<?x512xbf16>, %w: tensor<512x512xbf16>, %x: tensor<?x512xbf16>, %r: tensor<?xf32>, %g: tensor<512xbf16>) -> (tensor<?x512xbf16>, tensor<512xf32>) {
  %dx, %dg = fusion.fused_matmul %dy, %w norm_weight(%g : tensor<512xbf16>) norm_input(%x : tensor<?x512xbf16>) rstd(%r : tensor<?xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>} : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xbf16>, tensor<512xf32>
  return %dx, %dg : tensor<?x512xbf16>, tensor<512xf32>
}
func.func @ln_cluster(%dy: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %x: tensor<?x1024xbf16>, %m: tensor<?xf32>, %r: tensor<?xf32>, %g: tensor<1024xbf16>, %res: tensor<?x1024xbf16>) -> (tensor<?x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>) {
  %dx, %dg, %db = fusion.fused_matmul %dy, %w residual(%res : tensor<?x1024xbf16>) norm_weight(%g : tensor<1024xbf16>) norm_input(%x : tensor<?x1024xbf16>) mean(%m : tensor<?xf32>) rstd(%r : tensor<?xf32>) {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>
  return %dx, %dg, %db : tensor<?x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>
}
}
