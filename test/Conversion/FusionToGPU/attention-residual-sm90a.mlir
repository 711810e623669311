// fusion.gdpa with a residual on sm_90a: the kernel takes the residual as
// one more argument, a flat memref of its elements, and each consumer
// thread reads it at its fragment positions of O, adds it to O in f32 and
// rounds once. Dv <= 128: the reads are issued before O = P V (they overlap
// the MMA) from the group's rows of the stage's Q tile: the query itself,
// or a residual of its own with Dv <= D (dense or jagged q), which the
// group's threads copied there by cp.async (16 bytes each, coalesced; zero
// fill in the rows past L_q or outside the item's sequence) once
// S = Q K^T had read those rows.
// Dv > D: from global memory under one branch per row (rows past L_q, or
// outside the item's sequence, are not read). Dv = 256: from global
// memory, the first 64 columns before O = P V, each next 64 as the
// previous ones are rounded. A residual other than the query is
// prefetched into L2 by the producer thread, the item's rows after its
// loads. Jagged, the rows past offsets[B] get the residual's rows instead
// of zeros.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
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

// A residual of its own with Dv <= D (a pre-norm block's x + attn(norm(x))),
// D = Dv = 128: staged through the group's Q rows.
// CHECK-LABEL: func.func @own(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@own_kernel0 {{.*}} args({{.*}}, %c2 : index, %{{.*}} : memref<?xbf16>)
func.func @own(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %r: tensor<?x?x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v residual(%r : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// Jagged, i64 offsets, a residual of its own with D = 128, Dv = 64 (it
// takes the first of the group's two 64-column blocks of Q).
// CHECK-LABEL: func.func @jagged_own(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_own_kernel0 {{.*}} args({{.*}}, %{{.*}} : memref<?xi64>, %{{.*}} : memref<?xi32>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>)
func.func @jagged_own(%q: tensor<?x2x128xbf16>, %k: tensor<?x100x2x128xbf16>, %v: tensor<?x100x2x64xbf16>, %off: tensor<?xi64>, %r: tensor<?x2x64xbf16>) -> tensor<?x2x64xbf16> {
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi64>) residual(%r : tensor<?x2x64xbf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x128xbf16>, tensor<?x100x2x128xbf16>, tensor<?x100x2x64xbf16> -> tensor<?x2x64xbf16>
  return %o : tensor<?x2x64xbf16>
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

// The query from the stage: after S = Q K^T, the thread's 32 pairs of
// the group's rows of Q (two rows, two 64-column boxes), then O = P V (P
// in registers: wgmma's register form), then O + residual, rounded once;
// the residual argument is not read.
// CHECK-LABEL: gpu.func @block_kernel0(
// CHECK-SAME: %{{.*}}: index, %[[RK:.*]]: memref<?xbf16>)
// CHECK-NOT: %[[RK]]
// CHECK-NOT: nvvm.cp.async.bulk.prefetch
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.barrier
// CHECK-COUNT-32: vector.load %{{.*}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NOT: vector.load
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: %[[RK]]
// CHECK: %[[WIDE:.*]] = arith.extf %{{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[WIDE]] : vector<2xf32>
// CHECK: arith.truncf %[[SUM]] : vector<2xf32> to vector<2xbf16>
// CHECK-NOT: %[[RK]]
// CHECK: gpu.return

// Another tensor: the producer thread prefetches the item's rows of it
// into L2 after the item's loads (one bulk prefetch of Dv elements a row,
// rows below L_q); both rows' pairs from global memory, row-guarded,
// before the second MMA.
// CHECK-LABEL: gpu.func @other_kernel0(
// CHECK-SAME: %{{.*}}: index, %[[ORK:.*]]: memref<?xf16>)
// CHECK: nvgpu.tma.async.load
// CHECK: %[[OBASE:.*]] = memref.extract_aligned_pointer_as_index %[[ORK]]
// CHECK: %[[OEND:.*]] = arith.minui %{{.*}}, %{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[OEND]] step %c1 {
// CHECK: nvvm.cp.async.bulk.prefetch %{{.*}}, %c256_i32 : <1>
// CHECK: %[[OPAIRS:.*]]:8 = scf.if %{{.*}} -> (vector<2xf16>,
// CHECK-COUNT-8: vector.load %[[ORK]][%{{.*}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// CHECK: } else {
// CHECK-COUNT-3: scf.if %{{.*}} -> (vector<2xf16>,
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: %[[OWIDE:.*]] = arith.extf %[[OPAIRS]]#0 : vector<2xf16> to vector<2xf32>
// CHECK: arith.addf %{{.*}}, %[[OWIDE]] : vector<2xf32>

// A residual of its own, D = Dv = 128: the producer's L2 prefetch of its
// rows as for @other; once every thread of the group
// waited for S = Q K^T, 8 copies a thread of 16 bytes (zero fill by the
// source size) into the group's Q rows, one group; after O = P V, the wait,
// the fence, a barrier over both groups (every thread's release follows
// every copy into the stage: racecheck), the thread's 32 pairs from those
// rows, then the stage's release. No other read of the residual.
// CHECK-LABEL: gpu.func @own_kernel0(
// CHECK-SAME: %{{.*}}: index, %[[OWNR:.*]]: memref<?xbf16>)
// CHECK-NOT: vector.load %[[OWNR]]
// CHECK: memref.extract_aligned_pointer_as_index %[[OWNR]]
// CHECK: nvvm.cp.async.bulk.prefetch %{{.*}}, %c256_i32 : <1>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.barrier
// CHECK-COUNT-8: nvgpu.device_async_copy %[[OWNR]][%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?xbf16> to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[COPIES:.*]] = nvgpu.device_async_create_group
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: nvgpu.device_async_wait %[[COPIES]] {numGroups = 0 : i32}
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK-COUNT-32: vector.load %{{.*}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NEXT: nvgpu.mbarrier.arrive
// CHECK-NOT: vector.load %[[OWNR]]
// CHECK: gpu.return

// Jagged, D = 128, Dv = 64: staged as the dense kernel's (4 copies a
// thread: 8 chunks a row, 16 rows a step; rows outside the item's sequence
// get 0 bytes), the producer's prefetch over the item's rows [lo, hi), 128
// bytes each; no read of the residual at the fragment positions; the rows
// past offsets[B] copied from it.
// CHECK-LABEL: gpu.func @jagged_own_kernel0(
// CHECK-SAME: %[[JOUT:[^ ]*]]: memref<?xbf16>, %[[JOWNR:.*]]: memref<?xbf16>)
// CHECK: nvvm.cp.async.bulk.prefetch %{{.*}}, %c128_i32 : <1>
// CHECK-NOT: vector.load %[[JOWNR]]
// CHECK-COUNT-4: nvgpu.device_async_copy %[[JOWNR]][%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?xbf16> to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[JCOPIES:.*]] = nvgpu.device_async_create_group
// CHECK-NOT: vector.load %[[JOWNR]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: nvgpu.device_async_wait %[[JCOPIES]] {numGroups = 0 : i32}
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK-COUNT-16: vector.load %{{.*}} : memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NEXT: nvgpu.mbarrier.arrive
// CHECK-NOT: vector.load %[[JOWNR]]
// CHECK: %[[JROW:.*]] = vector.load %[[JOWNR]][%[[JI:.*]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %[[JROW]], %[[JOUT]][%[[JI]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>

// Dv = 256: one block before the MMA, the next three after it.
// CHECK-LABEL: gpu.func @wide_kernel0(
// CHECK-NOT: nvvm.cp.async.bulk.prefetch
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
// CHECK-NOT: nvvm.cp.async.bulk.prefetch
// CHECK-NOT: vector.load %[[JRK]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async
// CHECK-NOT: vector.load %[[JRK]]
// CHECK: vector.store %{{.*}}, %[[OUTK]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: %[[ROW:.*]] = vector.load %[[JRK]][%[[I:.*]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %[[ROW]], %[[OUTK]][%[[I]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>

}

// cp.async (16 bytes, its source size a register: 16 or 0) only in the
// kernels with a residual of its own staged through shared memory (dense
// and jagged).
// PTX-LABEL: .entry block_kernel0(
// PTX-NOT: cp.async.cg.shared.global
// PTX-LABEL: .entry other_kernel0(
// PTX-NOT: cp.async.cg.shared.global
// PTX-LABEL: .entry own_kernel0(
// PTX-COUNT-8: cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// PTX-NEXT: cp.async.commit_group;
// PTX-NOT: cp.async.cg.shared.global
// PTX: cp.async.wait_group 0;
// PTX-LABEL: .entry jagged_own_kernel0(
// PTX-COUNT-4: cp.async.cg.shared.global [%rd{{[0-9]+(\+[0-9]+)?}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// PTX-NEXT: cp.async.commit_group;
// PTX-NOT: cp.async.cg.shared.global
// PTX: cp.async.wait_group 0;
// PTX-LABEL: .entry wide_kernel0(
// PTX-NOT: cp.async.cg.shared.global
// PTX-LABEL: .entry jagged_kernel0(
// PTX-NOT: cp.async.cg.shared.global

// All assemble without spilling.
// PTXAS-DAG: ptxas ok: block_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: other_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wide_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_kernel0_windows registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: own_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_own_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_own_kernel0_windows registers={{[0-9]+}} spills=0
