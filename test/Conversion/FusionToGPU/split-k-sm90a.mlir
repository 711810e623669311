// REQUIRES: ptxas
// Split-K for a weight gradient whose few output tiles would leave SMs idle
// (fusion-plan-kernels split-k=true): the GEMM kernel writes each K range's
// f32 partial sums into a pooled workspace [split_k x M, N] (from
// registers, no staging), then <kernel>_splitk adds the ranges in order into
// the bf16 output (4 elements per thread, 256 threads per CTA), and the
// workspace is freed after it; the host counts the non-empty ranges of the
// dynamic token count as the kernel does. Both kernels assemble without
// spills.
// RUN: fusion-opt %s -fusion-plan-kernels=split-k=true -convert-fusion-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fusion-opt %s "-fusion-to-gpu=format=isa split-k=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: wgrad_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wgrad_kernel0_splitk registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

// 256 x 512: 2 x 2 tiles, 16 ranges (min(16, 132 / 4)).
// CHECK-LABEL: func.func @wgrad
// CHECK: %[[K:.*]] = memref.dim %arg0, %c0
// CHECK: %[[STEPS:.*]] = arith.ceildivui %[[K]], %c64
// CHECK: %[[PER:.*]] = arith.ceildivui %[[STEPS]], %c16
// CHECK: %[[PER1:.*]] = arith.maxui %[[PER]], %c1
// CHECK: %[[SPLITS:.*]] = arith.ceildivui %[[STEPS]], %[[PER1]]
// CHECK: %[[P:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%c4096, %c512) : memref<?x?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wgrad_kernel0 {{.*}} args({{.*}}%[[P]] : memref<?x?xf32>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[P]] {{\[\[}}0, 1]]
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wgrad_kernel0_splitk blocks in (%c128, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%[[FLAT]] : memref<?xf32>, %{{.*}} : memref<?xbf16>, %c131072 : index, %[[SPLITS]] : index)
// CHECK: gpu.dealloc async [%{{.*}}] %[[P]] : memref<?x?xf32>
// The kernel: work items over (range, tile), each range's K steps (the
// last range's fewer: a min).
// CHECK-LABEL: gpu.func @wgrad_kernel0
// CHECK: arith.minui
// CHECK-LABEL: gpu.func @wgrad_kernel0_splitk
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<?xf32>, vector<4xf32>
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wgrad(%dy: tensor<?x256xbf16>, %x: tensor<?x512xbf16>) -> tensor<256x512xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<?x256xbf16>, tensor<?x512xbf16> -> tensor<256x512xbf16>
  return %dw : tensor<256x512xbf16>
}
}
