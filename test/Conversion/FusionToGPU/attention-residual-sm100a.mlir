// REQUIRES: ptxas
// fusion.gdpa with a residual on sm_100a (tcgen05; assembled, never
// executed): the kernel takes the residual as one more argument, a flat
// memref of its elements; the epilogue thread of each query row reads its
// row of the residual in 16-byte chunks (one branch per row: rows past L_q,
// or outside the item's sequence, are not read), 64 columns ahead of their
// use: the first 64 after arriving on pFull (while O = P V runs), then the
// next 32 after each 32-column tcgen05.ld of O; O + residual in f32,
// rounded once. Jagged, the rows past offsets[B] get the residual's rows.
// A residual other than the query is prefetched into L2 by the producer
// thread (shared with sm_90a), the item's rows after its loads.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS

module attributes {fusion.target = #fusion.target<"sm_100a">} {

// The block's inner residual: the query added back.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[Q:.*]]: memref<?x?x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %{{.*}}: memref<?x?x2x128xbf16>)
// CHECK: %[[RQ:.*]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?x2x128xbf16> to memref<?xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@block_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{.*}} args({{.*}}, %c2 : index, %[[RQ]] : memref<?xbf16>)
func.func @block(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v residual(%q : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// Another tensor, D = 64, Dv = 256, f16.
// CHECK-LABEL: func.func @other(
// CHECK-SAME: %[[R:arg[0-9]+]]: memref<?x?x2x256xf16>, %{{.*}}: memref<?x?x2x256xf16>)
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[R]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?x2x256xf16> to memref<?xf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@other_kernel0 {{.*}} args({{.*}}, %c2 : index, %[[FLAT]] : memref<?xf16>)
func.func @other(%q: tensor<?x?x2x64xf16>, %k: tensor<?x100x2x64xf16>, %v: tensor<?x100x2x256xf16>, %r: tensor<?x?x2x256xf16>) -> tensor<?x?x2x256xf16> {
  %o = fusion.gdpa %q, %k, %v residual(%r : tensor<?x?x2x256xf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x64xf16>, tensor<?x100x2x64xf16>, tensor<?x100x2x256xf16> -> tensor<?x?x2x256xf16>
  return %o : tensor<?x?x2x256xf16>
}

// Jagged q, i64 offsets, another tensor.
// CHECK-LABEL: func.func @jagged(
// CHECK-SAME: %[[JR:arg[0-9]+]]: memref<?x2x128xbf16>, %[[JO:arg[0-9]+]]: memref<?x2x128xbf16>)
// CHECK-DAG: %[[OUT:.*]] = memref.reinterpret_cast %[[JO]]
// CHECK-DAG: %[[JRF:.*]] = memref.reinterpret_cast %[[JR]]
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_kernel0 {{.*}} args({{.*}} : memref<?xi64>, %{{.*}} : memref<?xi32>, %[[OUT]] : memref<?xbf16>, %[[JRF]] : memref<?xbf16>)
func.func @jagged(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi64>, %r: tensor<?x2x128xbf16>) -> tensor<?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi64>) residual(%r : tensor<?x2x128xbf16>) {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>
  return %o : tensor<?x2x128xbf16>
}

// The epilogue: P written and pFull arrived on, the residual's first 64
// columns (8 chunks) under the row's branch, then oFull; after each of the
// first two pieces of O the next 32 columns' chunks; O + residual in f32.
// CHECK-LABEL: gpu.func @block_kernel0(
// CHECK-SAME: %{{.*}}: index, %[[RK:.*]]: memref<?xbf16>)
// CHECK-NOT: nvvm.cp.async.bulk.prefetch
// CHECK: nvgpu.mbarrier.arrive %
// CHECK: %[[FIRST:.*]]:8 = scf.if %[[IN:.*]] -> (vector<8xbf16>,
// CHECK-COUNT-8: vector.load %[[RK]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK-NEXT: scf.if %[[IN]] -> (vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>)
// CHECK: %[[WIDE:.*]] = arith.extf %[[FIRST]]#0 : vector<8xbf16> to vector<8xf32>
// CHECK: %[[X:.*]] = vector.extract %[[WIDE]][0] : f32 from vector<8xf32>
// CHECK: arith.addf %{{.*}}, %[[X]] : f32
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK-NEXT: scf.if %[[IN]] -> (vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>)
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK-NOT: scf.if %[[IN]]
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK-NOT: scf.if %[[IN]]
// CHECK: nvgpu.tma.async.store

// A residual of its own: the producer thread prefetches the item's rows
// of it into L2 after the item's loads (512 bytes a row: Dv = 256 in f16).
// CHECK-LABEL: gpu.func @other_kernel0(
// CHECK: nvgpu.tma.async.load
// CHECK: scf.for
// CHECK: nvvm.cp.async.bulk.prefetch %{{.*}}, %c512_i32 : <1>

// Jagged: the residual's chunks copied into the rows past offsets[B].
// CHECK-LABEL: gpu.func @jagged_kernel0(
// CHECK-SAME: %[[OUTK:[^ ]*]]: memref<?xbf16>, %[[JRK:.*]]: memref<?xbf16>)
// CHECK: scf.if %{{.*}} -> (vector<8xbf16>,
// CHECK: nvgpu.tma.async.store
// CHECK: %[[ROW:.*]] = vector.load %[[JRK]][%[[I:.*]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %[[ROW]], %[[OUTK]][%[[I]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>

}

// PTXAS-DAG: ptxas ok: block_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: other_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_kernel0_windows registers={{[0-9]+}} spills=0
