// REQUIRES: ptxas
// Test the LayerNorm prologue (Lazy Pre-Norm of a LayerNorm) on the sm_90a
// kernel, on layer_norm(A) @ W^T + col_bias with nn.Linear's transposed
// weight (N = 384: tiles of 192, the sm_90a limit for this prologue):
// fusion-plan-kernels gives the GEMM B's column sums as col_sum, a 1-row
// GEMM of a [1, K] row of ones (a device buffer filled by gpu.memset) with
// B, launched before it in stream order; in the K loop the consumers add
// the values of their half A rows as well as their squares, from the same
// shared-memory loads, into two accumulators of 2 lanes each; after the
// loop both sums cross the thread pair (two XOR shuffles) and shared memory
// (the squares at row r, the sums at tile_m + r); the epilogue takes the
// mean and the one-pass variance clamped at 0, and computes
// rstd (acc - mean col_sum) (an FMA per pair) before col_bias. The kernel
// was not yet run on the H200.
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: lazy_ln_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: lazy_ln_kernel1 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @lazy_ln(%a: tensor<1000x512xbf16>, %b: tensor<384x512xbf16>, %cb: tensor<384xf32>) -> tensor<1000x384xbf16> {
  %c = fusion.fused_matmul %a, %b col_bias(%cb : tensor<384xf32>) {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs} : tensor<1000x512xbf16>, tensor<384x512xbf16> -> tensor<1000x384xbf16>
  return %c : tensor<1000x384xbf16>
}
}

// The host: the row of ones, the column sums' GEMM, then the fused GEMM
// reading them (its seventh argument), the buffers freed after it.
// CHECK-LABEL: func.func @lazy_ln
// CHECK-SAME: (%[[A:.*]]: memref<1000x512xbf16>, %[[B:.*]]: memref<384x512xbf16>, %[[CB:.*]]: memref<384xf32>, %[[OUT:.*]]: memref<1000x384xbf16>)
// CHECK: %[[ONES:.*]], %[[T1:.*]] = gpu.alloc async [%{{.*}}] () : memref<1x512xbf16>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : bf16
// CHECK-NEXT: gpu.memset async [%[[T1]]] %[[ONES]], %[[ONE]] : memref<1x512xbf16>, bf16
// CHECK: %[[SUMS:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] () : memref<1x384xf32>
// CHECK: %[[K0:.*]] = gpu.launch_func async [%{{.*}}] @fusion_kernels::@lazy_ln_kernel0
// CHECK: %[[CS:.*]] = memref.collapse_shape %[[SUMS]] {{\[\[}}0, 1]] : memref<1x384xf32> into memref<384xf32>
// CHECK: %[[CSDYN:.*]] = memref.cast %[[CS]] : memref<384xf32> to memref<?xf32>
// CHECK: gpu.launch_func async [%[[K0]]] @fusion_kernels::@lazy_ln_kernel1
// CHECK-SAME: %{{.*}} : memref<?xf32>, %[[CSDYN]] : memref<?xf32>
// CHECK: gpu.dealloc async [%{{.*}}] %[[ONES]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[SUMS]]

// The fused GEMM: per K step, for each of the 4 chunks of a half row, the
// squares and the values of its 4 pairs.
// CHECK-LABEL: gpu.func @lazy_ln_kernel1
// CHECK: nvgpu.warpgroup.mma
// CHECK-COUNT-4: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// After the loop: both sums across the thread pair, then into shared memory.
// CHECK: %[[SQ:.*]] = vector.reduction <add>, %{{.*}} : vector<2xf32> into f32
// CHECK: gpu.shuffle  xor %[[SQ]]
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %{{.*}} : vector<2xf32> into f32
// CHECK: gpu.shuffle  xor %[[SUM]]
// CHECK: memref.store %{{.*}}, %[[ROWSTATS:.*]][%[[ROW:.*]]] : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT: %[[SUMROW:.*]] = arith.addi %[[ROW]], %[[C128]] : index
// CHECK-NEXT: memref.store %{{.*}}, %[[ROWSTATS]][%[[SUMROW]]] : memref<256xf32, #gpu.address_space<workgroup>>
// The epilogue: mean, the variance clamped at 0, rstd; then per pair
// acc - mean col_sum (an FMA), times rstd, plus col_bias.
// CHECK: %[[MEAN:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[NEGMEAN:.*]] = arith.negf %[[MEAN]] : f32
// CHECK-NEXT: %[[MEANSQ:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[VAR:.*]] = math.fma %[[NEGMEAN]], %[[MEAN]], %[[MEANSQ]] : f32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[CLAMPED:.*]] = arith.maximumf %[[VAR]], %[[ZERO]] : f32
// CHECK: %[[RSTD:.*]] = math.rsqrt %{{.*}} : f32
// CHECK: %[[COLSUM:.*]] = vector.load %{{.*}} : memref<?xf32>, vector<2xf32>
// CHECK: %[[BIAS:.*]] = vector.load %{{.*}} : memref<?xf32>, vector<2xf32>
// CHECK: %[[NM:.*]] = vector.broadcast %[[NEGMEAN]] : f32 to vector<2xf32>
// CHECK-NEXT: %[[CENTERED:.*]] = math.fma %[[NM]], %[[COLSUM]], %{{.*}} : vector<2xf32>
// CHECK-NEXT: %[[R:.*]] = vector.broadcast %[[RSTD]] : f32 to vector<2xf32>
// CHECK-NEXT: %[[SCALED:.*]] = arith.mulf %[[CENTERED]], %[[R]] : vector<2xf32>
// CHECK-NEXT: arith.addf %[[SCALED]], %[[BIAS]] : vector<2xf32>
// CHECK: gpu.return
