// A jagged fusion.gdpa (q [T, H, D], batch b owning tokens offsets[b] ..
// offsets[b + 1], k and v dense): the window kernel writes each 128-token
// window's first batch into a pooled buffer, then the attention kernel takes
// (window, head) units and, per unit, one item per batch the window
// overlaps; q and the output are one [1, T, H, D] batch to the TMA. Without
// batches (or tokens) no tensor maps: the rows past offsets[B] are zeroed by
// plain stores.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// CHECK-LABEL: func.func @hstu(
// CHECK-SAME: %[[Q:.*]]: memref<?x2x128xbf16>, %[[K:.*]]: memref<?x128x2x128xbf16>, %[[V:.*]]: memref<?x128x2x128xbf16>, %[[OFF:.*]]: memref<?xi64>, %[[O:.*]]: memref<?x2x128xbf16>)
// CHECK: %[[LEN:.*]] = memref.dim %[[OFF]], %c0
// CHECK: %[[B:.*]] = arith.subi %{{.*}}, %c1
// CHECK: %[[T:.*]] = memref.dim %[[Q]], %c0
// CHECK: %[[WINDOWS:.*]] = arith.ceildivui %[[T]], %c128
// CHECK: %[[UNITS:.*]] = arith.muli %[[WINDOWS]], %c2
// CHECK: %[[WB:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xi32>
// CHECK: %[[FILLED:.*]] = gpu.launch_func async [%{{.*}}] @fusion_kernels::@hstu_kernel0_windows blocks in (%{{.*}}, %c1, %c1) threads in (%c256, %c1, %c1) {{ *}}dynamic_shared_memory_size %c0_i32 args(%[[OFF]] : memref<?xi64>, %[[WB]] : memref<?xi32>, %[[B]] : index, %[[T]] : index)
// CHECK: memref.expand_shape %[[Q]] {{\[\[}}0, 1], [2], [3]] output_shape [1, %[[T]], 2, 128]
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[O]]
// CHECK: %[[DONE:.*]] = gpu.launch_func async [%[[FILLED]]] @fusion_kernels::@hstu_kernel0 {{.*}} args({{.*}}, %[[B]] : index, %[[T]] : index, %c2 : index, %[[OFF]] : memref<?xi64>, %[[WB]] : memref<?xi32>, %[[FLAT]] : memref<?xbf16>)
// CHECK: gpu.dealloc async [%[[DONE]]] %[[WB]]
func.func @hstu(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi64>) -> tensor<?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi64>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>
  return %o : tensor<?x2x128xbf16>
}

// i32 offsets, D = 64, Dv = 256, L_kv = 100.
// CHECK-LABEL: func.func @wide_values(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wide_values_kernel0_windows
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wide_values_kernel0
func.func @wide_values(%q: tensor<?x1x64xf16>, %k: tensor<?x100x1x64xf16>, %v: tensor<?x100x1x256xf16>, %off: tensor<?xi32>) -> tensor<?x1x256xf16> {
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi32>) {activation = #fusion.activation<gelu>, scale = 0.25 : f32}
      : tensor<?x1x64xf16>, tensor<?x100x1x64xf16>, tensor<?x100x1x256xf16> -> tensor<?x1x256xf16>
  return %o : tensor<?x1x256xf16>
}

// The window kernel: thread b of B + 1 writes the windows that start in
// batch b, offsets read with a bounds check.
// CHECK-LABEL: gpu.func @hstu_kernel0(
// The units' items: a loop over the batches the window overlaps, each
// bounded by its offsets; rows of a batch that does not own the whole
// window go out by 16-byte stores, the whole window's by TMA; the rows past
// offsets[B] get zeros.
// CHECK: scf.while
// CHECK: memref.load %{{.*}} : memref<?xi64>
// CHECK: nvgpu.tma.async.load
// CHECK: scf.while
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async
// CHECK: nvgpu.tma.async.store
// CHECK: vector.store %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.store %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK-LABEL: gpu.func @hstu_kernel0_windows(
// CHECK-SAME: %{{.*}}: memref<?xi64>, %[[WBK:.*]]: memref<?xi32>, %{{.*}}: index, %{{.*}}: index)
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[WBK]]

}

// Both assemble; the jagged kernel with Dv = 256 (a 64 x 256 O accumulator
// beside the window loop's state) spills a few bytes, its dense twin none.
// PTXAS-DAG: ptxas ok: hstu_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: hstu_kernel0_windows registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wide_values_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-6]$}}
// PTXAS-DAG: ptxas ok: wide_values_kernel0_windows registers={{[0-9]+}} spills=0
