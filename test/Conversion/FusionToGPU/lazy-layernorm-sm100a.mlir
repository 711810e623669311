// REQUIRES: ptxas
// Test the LayerNorm prologue (Lazy Pre-Norm of a LayerNorm) on the sm_100a
// (tcgen05) kernel, on layer_norm(A) @ W^T + col_bias with nn.Linear's
// transposed weight (N = 384, tiles of 256): B's column sums come from a
// 1-row GEMM of ones with B (fusion-plan-kernels), launched first; the
// row-sum warps 2-3 (lazyRowSumWarps, as for RMSNorm: empty[s] and tmemFull
// count the MMA's commit and their 64 threads) add the values of their half
// rows as well as their squares, two accumulators of 2 lanes per 32-row
// group; after the tile both sums of each group cross the thread pair
// (eight XOR shuffles) and go to shared memory (the squares at row r, the
// sums at tile_m + r); the epilogue warpgroup (a row per thread) takes the
// mean and the one-pass variance clamped at 0, and per 8-column group
// computes acc - mean col_sum (an FMA) before rstd, as on sm_90a. Never
// executed (no B200 here).
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: not grep -E 'wgmma|setmaxnreg' %t.isa.mlir
// PTXAS-DAG: ptxas ok: lazy_ln_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: lazy_ln_kernel1 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @lazy_ln(%a: tensor<1000x512xbf16>, %b: tensor<384x512xbf16>, %cb: tensor<384xf32>) -> tensor<1000x384xbf16> {
  %c = fusion.fused_matmul %a, %b col_bias(%cb : tensor<384xf32>) {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs} : tensor<1000x512xbf16>, tensor<384x512xbf16> -> tensor<1000x384xbf16>
  return %c : tensor<1000x384xbf16>
}
}

// CHECK-LABEL: func.func @lazy_ln
// CHECK: gpu.memset async [%{{.*}}] %{{.*}}, %{{.*}} : memref<1x512xbf16>, bf16
// CHECK: %[[K0:.*]] = gpu.launch_func async [%{{.*}}] @fusion_kernels::@lazy_ln_kernel0
// CHECK: gpu.launch_func async [%[[K0]]] @fusion_kernels::@lazy_ln_kernel1

// CHECK-LABEL: gpu.func @lazy_ln_kernel1
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// The ring's empty[s] and tmemFull: the MMA's commit and the 64 readers.
// CHECK: nvgpu.mbarrier.init %{{.*}}[%{{.*}}], %c65
// The row-sum warps: squares and values, pair by pair.
// CHECK: %[[WARPS23:.*]] = arith.divui %thread_id_x, %c64{{.*}} : index
// CHECK: %[[IS_LAZY:.*]] = arith.cmpi eq, %[[WARPS23]], %c1{{.*}} : index
// CHECK-NEXT: scf.if %[[IS_LAZY]] {
// CHECK-NOT: nvvm.tcgen05
// CHECK-COUNT-16: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK-NOT: nvvm.tcgen05
// CHECK-COUNT-8: gpu.shuffle  xor
// CHECK-NOT: nvvm.tcgen05
// CHECK-COUNT-8: memref.store %{{.*}} : memref<256xf32, #gpu.address_space<workgroup>>
// The epilogue: the row's squares and sums, mean, clamped variance, rstd.
// CHECK: %[[SQ:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SUM:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK: %[[MEAN:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK-NEXT: %[[NEGMEAN:.*]] = arith.negf %[[MEAN]] : f32
// CHECK-NEXT: %[[MEANSQ:.*]] = arith.divf %[[SQ]], %{{.*}} : f32
// CHECK-NEXT: %[[VAR:.*]] = math.fma %[[NEGMEAN]], %[[MEAN]], %[[MEANSQ]] : f32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.maximumf %[[VAR]], %[[ZERO]] : f32
// CHECK: %[[RSTD:.*]] = math.rsqrt %{{.*}} : f32
// CHECK: nvvm.tcgen05.ld
// Per 8-column group: col_sum (predicated on N), acc - mean col_sum, rstd.
// CHECK: %[[CS:.*]] = scf.if %{{.*}} -> (vector<8xf32>) {
// CHECK-NEXT: vector.load %{{.*}} : memref<?xf32>, vector<8xf32>
// CHECK: %[[NM:.*]] = vector.broadcast %[[NEGMEAN]] : f32 to vector<8xf32>
// CHECK-NEXT: math.fma %[[NM]], %[[CS]], %{{.*}} : vector<8xf32>
// CHECK: vector.broadcast %[[RSTD]] : f32 to vector<8xf32>
// CHECK: gpu.return
