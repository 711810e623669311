// fusion.gdpa with a residual on sm_90a: the kernel takes the residual as
// one more argument, a flat memref of its elements, and each consumer
// thread reads it at its fragment positions of O, adds it to O in f32 and
// rounds once. Dv <= 128: the reads are issued before O = P V (they overlap
// the MMA); a residual that is the query itself is then read from the
// stage's Q tile, any other from global memory under one branch per row
// (rows past L_q, or outside the item's sequence, are not read). Dv = 256:
// from global memory, the first 64 columns before O = P V, each next 64 as
// the previous ones are rounded. Jagged, the rows past offsets[B] get the
// residual's rows instead of zeros.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// The block's inner residual: the query added back.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[Q:.*]]: memref<?x?x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %{{.*}}: memref<?x?x2x128xbf16>)
// CHECK: %[[RQ:.*]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?x2x128xbf16> to memref<?xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@block_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{.*}} args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %{{.*}} : index, %{{.*}} : index, %c2 : index, %[[RQ]] : memref<?xbf16>)
func.func @block(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v residual(%q : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// Another tensor, D = 64, Dv = 128, f16.
// CHECK-LABEL: func.func @other(
// CHECK-SAME: %[[R:arg[0-9]+]]: memref<?x?x2x128xf16>, %{{.*}}: memref<?x?x2x128xf16>)
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[R]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?x2x128xf16> to memref<?xf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@other_kernel0 {{.*}} args({{.*}}, %c2 : index, %[[FLAT]] : memref<?xf16>)
func.func @other(%q: tensor<?x?x2x64xf16>, %k: tensor<?x100x2x64xf16>, %v: tensor<?x100x2x128xf16>, %r: tensor<?x?x2x128xf16>) -> tensor<?x?x2x128xf16> {
  %o = fusion.gdpa %q, %k, %v residual(%r : tensor<?x?x2x128xf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x64xf16>, tensor<?x100x2x64xf16>, tensor<?x100x2x128xf16> -> tensor<?x?x2x128xf16>
  return %o : tensor<?x?x2x128xf16>
}

// The query again, D = Dv = 256: from global memory (the stage goes back
// before the later blocks are read).
// CHECK-LABEL: func.func @wide(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wide_kernel0 {{.*}} args({{.*}}, %c2 : index, %{{.*}} : memref<?xbf16>)
func.func @wide(%q: tensor<?x?x2x256xbf16>, %k: tensor<?x64x2x256xbf16>, %v: tensor<?x64x2x256xbf16>) -> tensor<?x?x2x256xbf16> {
  %o = fusion.gdpa %q, %k, %v residual(%q : tensor<?x?x2x256xbf16>) {activation = #fusion.activation<gelu>, scale = 0.125 : f32}
      : tensor<?x?x2x256xbf16>, tensor<?x64x2x256xbf16>, tensor<?x64x2x256xbf16> -> tensor<?x?x2x256xbf16>
  return %o : tensor<?x?x2x256xbf16>
}

// Jagged q, i32 offsets: the residual after the offsets, the jagged output.
// CHECK-LABEL: func.func @jagged(
// CHECK-SAME: %[[JQ:.*]]: memref<?x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %[[OFF:.*]]: memref<?xi32>, %[[JO:.*]]: memref<?x2x128xbf16>)
// CHECK: @fusion_kernels::@jagged_kernel0_windows
// CHECK-DAG: %[[OUT:.*]] = memref.reinterpret_cast %[[JO]]
// CHECK-DAG: %[[JR:.*]] = memref.reinterpret_cast %[[JQ]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x2x128xbf16> to memref<?xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_kernel0 {{.*}} args({{.*}}, %[[OFF]] : memref<?xi32>, %{{.*}} : memref<?xi32>, %[[OUT]] : memref<?xbf16>, %[[JR]] : memref<?xbf16>)
func.func @jagged(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>) -> tensor<?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi32>) residual(%q : tensor<?x2x128xbf16>) {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>
  return %o : tensor<?x2x128xbf16>
}

// The query from the stage: after P is written, the thread's 32 pairs of
// the group's rows of Q (two rows, two 64-column boxes), then O = P V, then
// O + residual, rounded once; the residual argument is not read.
// CHECK-LABEL: gpu.func @block_kernel0(
// CHECK-SAME: %{{.*}}: index, %[[RK:.*]]: memref<?xbf16>)
// CHECK-NOT: %[[RK]]
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier
// CHECK-COUNT-32: vector.load %{{.*}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NOT: vector.load
// CHECK: nvgpu.warpgroup.mma
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: %[[RK]]
// CHECK: %[[WIDE:.*]] = arith.extf %{{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[WIDE]] : vector<2xf32>
// CHECK: arith.truncf %[[SUM]] : vector<2xf32> to vector<2xbf16>
// CHECK-NOT: %[[RK]]
// CHECK: gpu.return

// Another tensor: both rows' pairs from global memory, row-guarded, before
// the second MMA.
// CHECK-LABEL: gpu.func @other_kernel0(
// CHECK-SAME: %{{.*}}: index, %[[ORK:.*]]: memref<?xf16>)
// CHECK: %[[OPAIRS:.*]]:8 = scf.if %{{.*}} -> (vector<2xf16>,
// CHECK-COUNT-8: vector.load %[[ORK]][%{{.*}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// CHECK: } else {
// CHECK-COUNT-3: scf.if %{{.*}} -> (vector<2xf16>,
// CHECK: nvgpu.warpgroup.mma
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: %[[OWIDE:.*]] = arith.extf %[[OPAIRS]]#0 : vector<2xf16> to vector<2xf32>
// CHECK: arith.addf %{{.*}}, %[[OWIDE]] : vector<2xf32>

// Dv = 256: one block before the MMA, the next three after it.
// CHECK-LABEL: gpu.func @wide_kernel0(
// CHECK: scf.if %{{.*}} -> (vector<2xbf16>,
// CHECK: scf.if %{{.*}} -> (vector<2xbf16>,
// CHECK-NOT: scf.if %{{.*}} -> (vector<2xbf16>,
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-6: scf.if %{{.*}} -> (vector<2xbf16>,
// CHECK-NOT: scf.if %{{.*}} -> (vector<2xbf16>,
// CHECK: nvgpu.tma.async.store

// Jagged: the query from the stage; the residual's chunks copied into the
// rows past offsets[B].
// CHECK-LABEL: gpu.func @jagged_kernel0(
// CHECK-SAME: %[[OUTK:[^ ]*]]: memref<?xbf16>, %[[JRK:.*]]: memref<?xbf16>)
// CHECK-NOT: vector.load %[[JRK]]
// CHECK: nvgpu.warpgroup.mma
// CHECK-NOT: vector.load %[[JRK]]
// CHECK: vector.store %{{.*}}, %[[OUTK]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: %[[ROW:.*]] = vector.load %[[JRK]][%[[I:.*]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %[[ROW]], %[[OUTK]][%[[I]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>

}

// All assemble without spilling.
// PTXAS-DAG: ptxas ok: block_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: other_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wide_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_kernel0_windows registers={{[0-9]+}} spills=0
