// REQUIRES: ptxas
// Grad epilogues (backward regrouping): the norm's backward in the dgrad
// GEMM's kernel. With a 16-bit dx, over one CTA or a cluster, in the
// epilogue warps (fusion-plan-kernels: epilogue_warps = true): the
// consumers stage dh (the tile rounded to bf16, tileFull) and go on to the
// next tile's MMA; the epilogue warps read x (norm_input) from global memory
// (the producer prefetches the tile's rows into L2), sum a x_hat (and a)
// per row by xor shuffles 1-16 apart, exchange the sums over DSMEM
// (st.async), write dx in place and TMA-store it; dweight / dbias are one
// partial row per CTA ([params][gridDim.x / cluster_n][N], the three warps'
// sums through the free staging buffers), summed in order by
// <kernel>_params. An f32 dx keeps the consumers' form (per-warp column
// partials [params][row blocks x 8][N]). Every kernel assembles without
// spills (the epilogue warps at 136 registers, 152 with LayerNorm, the consumers at 184 and 176).
// RUN: fusion-opt %s -fusion-plan-kernels -convert-fusion-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s "-fusion-to-gpu=format=isa" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: rms_normalized_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_weight_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_weight_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_cluster_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_cluster_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_f32_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_f32_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

// The planner's choice: epilogue warps for a bf16 dx (one CTA or a
// cluster), no norm_input tile in shared memory; the consumers' form for f32.
// PLAN-LABEL: func.func @rms_normalized
// PLAN: cluster_n = 1, consumers = 2, smem_bytes = 216576, epilogue_warps = true>
// PLAN-LABEL: func.func @rms_weight
// PLAN: cluster_n = 2, consumers = 2, smem_bytes = 218624, epilogue_warps = true>
// PLAN-LABEL: func.func @ln_cluster
// PLAN: cluster_n = 4, consumers = 2, smem_bytes = 224768, epilogue_warps = true>
// PLAN-LABEL: func.func @rms_f32
// PLAN-NOT: epilogue_warps
// PLAN: return

// The weightless regrouped form: x_hat read directly, no parameter grads.
// CHECK-LABEL: func.func @rms_normalized
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_normalized_kernel0
// CHECK-NOT: _params
// CHECK: return

// RMSNorm with its weight, a cluster of 2: dg from one partial row per
// cluster, units = the launch's clusters (grid / 2).
// CHECK-LABEL: func.func @rms_weight
// CHECK: %[[CL:.*]] = call @fusionrtMaxActiveClusters
// CHECK: %[[GRID:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK: %[[UNITS:.*]] = arith.divui %[[GRID]], %c2 : index
// CHECK: %[[COUNT:.*]] = arith.muli %[[UNITS]], %c512 : index
// CHECK: %[[P:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%[[COUNT]]) : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_weight_kernel0 clusters in (%c2, %c1, %c1) blocks in (%[[GRID]], %c1, %c1) {{.*}}%[[P]] : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_weight_kernel0_params blocks in (%c64, %c1, %c1) threads in (%c512, %c1, %c1) {{.*}}args(%[[P]] : memref<?xf32>, %{{.*}} : memref<?xf32>, %[[UNITS]] : index)
// CHECK: gpu.dealloc async [%{{.*}}] %[[P]] : memref<?xf32>

// LayerNorm with weight, bias gradient and a residual, N = 1024: a cluster
// of 4 CTAs, two exchange rounds; dgamma and dbeta.
// CHECK-LABEL: func.func @ln_cluster
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0 clusters in (%c4, %c1, %c1)
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0_params blocks in (%c128, %c2, %c1)

// f32 dx: the consumers' form.
// CHECK-LABEL: func.func @rms_f32
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_f32_kernel0 blocks
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_f32_kernel0_params

// The kernel. The producer warpgroup keeps 152 registers (LayerNorm), the consumers 176.
// The producer prefetches the tile's norm_input (and residual) rows into L2.
// The consumers stage dh and arrive on tileFull, sending nothing. The
// epilogue warps: the row scalars; tileFull; both rounds' slot barriers
// armed; pass A (x_hat from norm_input, the sums over the row's 32 lanes,
// st.async to the peers); the slots awaited; pass B (dx in place); the
// TMA store (fence, barrier over the epilogue warps, stores, wait),
// tileEmpty; after the tiles, the CTA's dgamma / dbeta partial row.
// CHECK-LABEL: gpu.func @ln_cluster_kernel0
// CHECK: nvvm.setmaxregister  decrease 152
// CHECK: cp.async.bulk.prefetch
// CHECK: cp.async.bulk.prefetch
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c2048, predicate
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c2048, predicate
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: st.async
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.barrier id = %c4_i32 number_of_threads = %c96_i32
// CHECK-COUNT-4: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvgpu.mbarrier.arrive
// CHECK: nvvm.barrier id = %c4_i32 number_of_threads = %c96_i32
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<?xf32>
// CHECK: nvvm.setmaxregister  increase 176
// CHECK-NOT: st.async
// CHECK: nvgpu.mbarrier.arrive
// CHECK: gpu.return
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
func.func @rms_f32(%dy: tensor<?x512xbf16>, %w: tensor<256x512xbf16>, %x: tensor<?x256xbf16>, %r: tensor<?xf32>, %g: tensor<256xbf16>) -> (tensor<?x256xf32>, tensor<256xf32>) {
  %dx, %dg = fusion.fused_matmul %dy, %w norm_weight(%g : tensor<256xbf16>) norm_input(%x : tensor<?x256xbf16>) rstd(%r : tensor<?xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, transpose_rhs} : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xf32>, tensor<256xf32>
  return %dx, %dg : tensor<?x256xf32>, tensor<256xf32>
}
}
