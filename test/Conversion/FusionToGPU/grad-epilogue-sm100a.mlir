// REQUIRES: ptxas
// Grad epilogues (backward regrouping) on the sm_100a (tcgen05) kernel
// (Gemm/GemmTcgen05GradEpilogue.cpp): the norm's backward on the dgrad
// GEMM's accumulator dh in tensor memory, a row per thread of the epilogue
// warpgroup, its row sums exchanged like a forward norm's (one CTA, or a
// cluster over DSMEM); dweight / dbias as per-16-row column partials
// [params][row blocks x 8][N] (the sm_90a workspace and reduction kernel),
// each column summed over its 16 rows by a butterfly over the lanes (XOR 8,
// 1, 2, 4) that leaves each lane 4 columns. The passes read dh a 32-column
// half at a time: pass 1 (the row sums), the column sums, the exchange,
// pass 2 (dx; the stage released after its last loads). The same host
// side as on sm_90a. Every kernel assembles for sm_100a without spills; no
// wgmma. Never executed (no B200 here).
// RUN: fusion-opt %s -fusion-plan-kernels -convert-fusion-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fusion-opt %s "-fusion-to-gpu=format=isa" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// One allocation and one deallocation site per GEMM kernel (three):
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=THREE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=THREE
// THREE: {{^}}3{{$}}
// PTXAS-DAG: ptxas ok: rms_normalized_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_weight_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_weight_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_cluster_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_cluster_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

// The weightless regrouped form: x_hat read directly, no parameter grads.
// CHECK-LABEL: func.func @rms_normalized
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_normalized_kernel0
// CHECK-NOT: _params
// CHECK: return

// RMSNorm with its weight (N = 512: one CTA, one 512-column stage): dg
// from 8 partial rows per row block.
// CHECK-LABEL: func.func @rms_weight
// CHECK: %[[P:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_weight_kernel0 {{.*}}%[[P]] : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_weight_kernel0_params {{.*}}args(%[[P]] : memref<?xf32>
// CHECK: gpu.dealloc async [%{{.*}}] %[[P]] : memref<?xf32>

// LayerNorm with weight, bias gradient and a residual, N = 1024: a cluster
// of 2 CTAs of 512 columns, two exchange rounds; dgamma and dbeta.
// CHECK-LABEL: func.func @ln_cluster
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0 clusters in (%c2, %c1, %c1)
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0_params

// The kernel. Pass 1: halves of a chunk read from tensor memory, each
// load waited for.
// CHECK-LABEL: gpu.func @ln_cluster_kernel0
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[TEMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// The column sums: the butterfly's steps (XOR 8, 1, 2, 4), and each lane's
// 4 columns stored into the partials (16-byte aligned).
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// The row sums to the peers: mean(a x_hat), then mean(a).
// CHECK: st.async
// CHECK: st.async
// Pass 2: the last chunk's loads release the stage.
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[TEMPTY]]
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
module attributes {fusion.target = #fusion.target<"sm_100a">} {
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
