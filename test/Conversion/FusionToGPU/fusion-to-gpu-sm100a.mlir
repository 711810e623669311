// REQUIRES: ptxas
// Test the structure of the sm_100a (tcgen05) GEMM kernel
// (Gemm/GemmTcgen05Kernel.cpp), on a plain bf16 GEMM with N = 256 (tile_n =
// 256: two 256-column accumulator stages, all 512 tensor-memory columns):
// the tensor memory is allocated by one whole warp under a warp-uniform
// condition before anything uses it, its permit relinquished once, freed
// exactly once, by the MMA warp after waiting for the epilogue's release of
// every accumulator stage; each K step's MMAs are followed by a commit to
// the ring's empty barrier and each tile's by a commit to tmemFull; every
// tcgen05.ld is followed by wait::ld before its registers are used; every
// mbarrier wait that precedes tcgen05 operations is followed by
// fence::after_thread_sync, and the epilogue's arrival on tmemEmpty
// follows fence::before_thread_sync; no wgmma anywhere in the module. The
// kernel was never executed (no B200 here).
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// Exactly one allocation, relinquish and deallocation site, the four k16
// MMAs of a K step once, and a commit per K step and per tile:
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.relinquish_alloc_permit' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.mma' %t.ptx | FileCheck %s --check-prefix=FOUR
// RUN: grep -c 'tcgen05.commit' %t.ptx | FileCheck %s --check-prefix=TWO
// ONE: {{^}}1{{$}}
// TWO: {{^}}2{{$}}
// FOUR: {{^}}4{{$}}

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @plain(%a: tensor<1000x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<1000x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<1000x512xbf16>, tensor<512x256xbf16> -> tensor<1000x256xbf16>
  return %c : tensor<1000x256xbf16>
}
}

// The sm_100a target on the kernels' module, 256 threads, no register limit.
// CHECK: gpu.module @fusion_kernels [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx86">]
// CHECK-LABEL: gpu.func @plain_kernel0
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-NOT: nvvm.maxnreg
// The ring (full, empty: one commit each) and the accumulator stages'
// barriers (tmemFull: one commit; tmemEmpty: the 128 epilogue threads).
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK-NEXT: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c1
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-NEXT: %[[TEMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.mbarrier.init %[[TFULL]][%{{.*}}], %c1
// CHECK: nvgpu.mbarrier.init %[[TEMPTY]][%{{.*}}], %c128
// Warp 1 allocates 512 columns (a warp-uniform condition: the warp index),
// relinquishes, and the barrier publishes the address between the fences.
// CHECK: %[[WARP:.*]] = arith.divui %thread_id_x, %c32 : index
// CHECK: %[[IS_WARP1:.*]] = arith.cmpi eq, %[[WARP]], %c1{{.*}} : index
// CHECK-NEXT: scf.if %[[IS_WARP1]] {
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[SLOT:.*]] = llvm.inttoptr
// CHECK-NEXT: %[[COLS:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.alloc %[[SLOT]], %[[COLS]] : !llvm.ptr<3>, i32
// CHECK-NEXT: nvvm.tcgen05.relinquish_alloc_permit
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: %[[BASE:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<6>
// The MMA warp: per tile, wait until the stage is released, then per K step
// wait for the slot, four MMAs (kind::f16, M = 128, N = 256: idesc
// 0x08410490 = 138478736, A K-major, B N-major; descriptors: the sm_90a ones
// | 1 << 46, A 0x4000404004000000, B 0x4000404002000000, the address >> 4
// added; A steps 2, B 128 per k16), commit to empty[s]; after the K loop,
// commit to tmemFull.
// CHECK: %[[IS_WARP1_AGAIN:.*]] = arith.cmpi eq, %[[WARP]], %c1{{.*}} : index
// CHECK-NEXT: scf.if %[[IS_WARP1_AGAIN]] {
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TEMPTY]][%[[STAGE:.*]]], %{{.*}}, %{{.*}}
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]][%{{.*}}], %{{.*}}, %{{.*}}
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: llvm.mlir.constant(4611756662116581376 : i64) : i64
// CHECK: llvm.mlir.constant(4611756662083026944 : i64) : i64
// CHECK: %[[IDESC:.*]] = llvm.mlir.constant(138478736 : i32) : i32
// CHECK-COUNT-4: nvvm.tcgen05.mma %{{.*}}, %{{.*}}, %{{.*}}, %[[IDESC]], %{{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>}
// CHECK-NEXT: %[[SLOT_BAR:.*]] = nvgpu.mbarrier.get %[[EMPTY]][%{{.*}}]
// CHECK-NEXT: %[[SLOT_PTR:.*]] = llvm.inttoptr %[[SLOT_BAR]]
// CHECK-NEXT: nvvm.tcgen05.commit %[[SLOT_PTR]] : !llvm.ptr<3>
// CHECK: %[[ACC_BAR:.*]] = nvgpu.mbarrier.get %[[TFULL]][%[[STAGE]]]
// CHECK-NEXT: %[[ACC_PTR:.*]] = llvm.inttoptr %[[ACC_BAR]]
// CHECK-NEXT: nvvm.tcgen05.commit %[[ACC_PTR]] : !llvm.ptr<3>
// At the end, each stage's last release, then the one deallocation.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TEMPTY]][%c0
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TEMPTY]][%c1
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-NEXT: %[[COLS2:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.dealloc %[[BASE]], %[[COLS2]] : !llvm.ptr<6>, i32
// CHECK-NEXT: }
// The epilogue warpgroup: wait for the stage, then per 64 columns two loads
// and wait::ld before the values are used; after the tile's last loads,
// fence::before and the release of the stage.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TFULL]][%[[ESTAGE:.*]]], %{{.*}}, %{{.*}}
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-COUNT-3: nvvm.tcgen05.wait <load>
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[TEMPTY]][%[[ESTAGE]]]
// CHECK-NOT: nvvm.tcgen05
// CHECK: gpu.return

// The PTX, in the order of the code. Set-up: allocation in warp 1 only (a
// branch around it), then the fenced barrier.
// PTX: .entry plain_kernel0
// PTX: .maxntid 256, 1, 1
// PTX: @%p{{[0-9]+}} bra
// PTX-NEXT: mov.b32 %r{{[0-9]+}}, 512;
// PTX-NEXT: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// PTX-NEXT: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
// PTX: tcgen05.fence::before_thread_sync;
// PTX-NEXT: bar.sync 0;
// PTX-NEXT: tcgen05.fence::after_thread_sync;
// The producer's TMA loads, then the MMA warp.
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: tcgen05.fence::after_thread_sync;
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: tcgen05.fence::after_thread_sync;
// PTX: mov.b32 %r{{[0-9]+}}, 138478736;
// PTX-NEXT: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, %p{{[0-9]+}};
// PTX-COUNT-3: tcgen05.mma.cta_group::1.kind::f16
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: tcgen05.fence::after_thread_sync;
// PTX-NEXT: mov.b32
// PTX-NEXT: tcgen05.dealloc.cta_group::1.sync.aligned.b32
// The epilogue: the tmemFull wait, fenced; loads, wait::ld, and for the
// last chunk fence::before then the tmemEmpty arrival.
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: tcgen05.fence::after_thread_sync;
// PTX: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX: tcgen05.wait::ld.sync.aligned;
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// PTX-COUNT-2: tcgen05.wait::ld.sync.aligned;
// PTX: tcgen05.wait::ld.sync.aligned;
// PTX-NEXT: tcgen05.fence::before_thread_sync;
// PTX-NEXT: add.s64
// PTX-NEXT: mbarrier.arrive.shared.b64
// PTX-NOT: tcgen05.ld
