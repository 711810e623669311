// REQUIRES: ptxas
// Test the structure of the sm_100a (tcgen05) attention kernel
// (Attention/AttentionTcgen05Kernel.cpp) on a dense bf16 fusion.gdpa with
// D = Dv = L_kv = 128: 256 threads, one CTA per SM; S [128, 128] and
// O [128, 128] in 256 tensor-memory columns, allocated by one whole warp
// under a warp-uniform condition before anything uses them, the permit
// relinquished once, freed exactly once by the MMA warp after the teardown
// barrier with the epilogue warpgroup; per item the MMA warp waits full[s]
// then issues S = Q K^T (two K steps of four k16) and commits to sFull,
// waits pFull then issues O = P V and commits to the ring's empty barrier
// and to oFull; the epilogue waits sFull, reads S (tcgen05.ld, then
// wait::ld before any use), writes P, fences it to the async proxy and
// arrives on pFull after fence::before_thread_sync; waits oFull, reads O,
// stores it by TMA. Every mbarrier wait that precedes tcgen05 operations
// is followed by fence::after_thread_sync; no wgmma or setmaxnreg anywhere
// in the module. The kernel was never executed (no B200 here).
// RUN: fusion-opt %s --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// One allocation, relinquish and deallocation site; the 2 x 4 k16 MMAs of
// S and the 2 x 4 of O once each; three commits (sFull, empty[s], oFull);
// a wait::ld per tcgen05.ld (4 of S, 4 of O):
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.relinquish_alloc_permit' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.mma' %t.ptx | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c 'tcgen05.commit' %t.ptx | FileCheck %s --check-prefix=THREE
// RUN: grep -c 'tcgen05.ld.sync.aligned.32x32b.x32' %t.ptx | FileCheck %s --check-prefix=EIGHT
// RUN: grep -c 'tcgen05.wait::ld' %t.ptx | FileCheck %s --check-prefix=EIGHT
// ONE: {{^}}1{{$}}
// THREE: {{^}}3{{$}}
// EIGHT: {{^}}8{{$}}
// SIXTEEN: {{^}}16{{$}}
// PTXAS: ptxas ok: dense_kernel0 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @dense(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}
}

// The launch: 256 threads; the kernel on the sm_100a target, one CTA per SM.
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@dense_kernel0 blocks in (%{{.*}}) threads in (%c256,
// CHECK: gpu.module @fusion_kernels [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx86">]
// CHECK-LABEL: gpu.func @dense_kernel0
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: nvvm.minctasm = 1
// CHECK-NOT: nvvm.maxnreg
// The ring: full (one TMA transaction), empty (one commit); then sFull
// (one commit), pFull (the epilogue's 128 threads), oFull (one commit).
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-NEXT: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c1
// CHECK: %[[SFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[PFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[OFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.init %[[SFULL]][%{{.*}}], %c1
// CHECK: nvgpu.mbarrier.init %[[PFULL]][%{{.*}}], %c128
// CHECK: nvgpu.mbarrier.init %[[OFULL]][%{{.*}}], %c1
// Warp 1 allocates 256 columns (S 128 + O 128) under a warp-uniform
// condition, relinquishes; the barrier publishes the address between the
// fences.
// CHECK: %[[WARP:.*]] = arith.divui %thread_id_x{{.*}}, %c32 : index
// CHECK: %[[IS_WARP1:.*]] = arith.cmpi eq, %[[WARP]], %c1{{.*}} : index
// CHECK-NEXT: scf.if %[[IS_WARP1]] {
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.alloc %{{.*}}, %[[COLS]] : !llvm.ptr<3>, i32
// CHECK-NEXT: nvvm.tcgen05.relinquish_alloc_permit
// CHECK: nvvm.tcgen05.fence <before>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvvm.tcgen05.fence <after>

// PTX: .maxntid 256, 1, 1
// PTX: .minnctapersm 1
// PTX: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// PTX-NEXT: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
// PTX: tcgen05.fence::before_thread_sync;
// PTX-NEXT: bar.sync 0;
// PTX-NEXT: tcgen05.fence::after_thread_sync;
// The producer's TMA loads (Q 2 boxes, K 4, V 4).
// PTX-COUNT-10: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// The MMA warp: full[s], then S's eight k16 MMAs (the first one starting
// the accumulator: the predicate of the other seven is true), one commit.
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync;
// PTX: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r[[S:[0-9]+]]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r[[SIDESC:[0-9]+]], %p[[FIRST:[0-9]+]];
// PTX-COUNT-7: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r[[S]]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r[[SIDESC]], %p[[MORE:[0-9]+]];
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// pFull, then O's eight, committed to empty[s] and oFull.
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync;
// PTX: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r[[O:[0-9]+]]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r[[OIDESC:[0-9]+]], %p[[FIRST]];
// PTX-COUNT-7: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r[[O]]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r[[OIDESC]], %p[[MORE]];
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// Teardown: after the epilogue's last reads, the fence, then the free.
// PTX: bar.sync 2, 160;
// PTX-NEXT: tcgen05.fence::after_thread_sync;
// PTX: tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r{{[0-9]+}}, %r{{[0-9]+}};
// The epilogue: sFull, the fence, S a row per thread (32 columns a load,
// each waited for before use), P fenced to the async proxy, pFull.
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync;
// PTX: bar.sync 1, 128;
// PTX-NEXT: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX: tcgen05.wait::ld.sync.aligned;
// PTX: fence.proxy.async.shared::cta;
// PTX-NEXT: tcgen05.fence::before_thread_sync;
// PTX-NEXT: mbarrier.arrive.shared.b64
// oFull, the fence, O; the staging fenced and synchronized before the
// TMA stores (two 64-row halves x 2 boxes of 64 columns).
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync;
// PTX-NEXT: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX: tcgen05.wait::ld.sync.aligned;
// PTX: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.sync 1, 128;
// PTX-COUNT-4: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX: tcgen05.fence::before_thread_sync;
// PTX-NEXT: bar.sync 2, 160;
