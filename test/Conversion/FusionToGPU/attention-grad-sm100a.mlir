// REQUIRES: ptxas
// Test the structure of the sm_100a (tcgen05) attention backward
// (Attention/AttentionGradTcgen05Kernel.cpp) on a dense bf16
// fusion.gdpa_grad with D = Dv = L_kv = 128: 256 threads, one CTA per SM,
// one stage of (Q, dO) of 128 tokens (230416 bytes of shared memory);
// 512 tensor-memory columns (S^T then dQ, dP^T, dV, dK: 128 + 128 + 128 +
// 128) allocated by one whole warp under a warp-uniform condition, the
// permit relinquished once, freed exactly once by the MMA warp after the
// teardown barrier with the epilogue warpgroup. Per query tile the MMA warp
// waits full[s] and issues dP^T = V dO^T (2 K steps x 2 halves x 4 k16),
// waits dqEmpty, issues S^T = K Q^T (16) and commits to sFull; waits pFull,
// issues dV, dK (2 halves x 4 k16 each) and dQ (2 column blocks x 2 key
// blocks x 4 k16) and commits to empty[s] and dqFull; after the unit it
// commits to kvEmpty. The epilogue waits sFull, reads S^T and dP^T 16
// columns at a time (wait::ld before any use), writes P^T and dS^T, fences
// them to the async proxy and arrives on pFull after
// fence::before_thread_sync; waits dqFull, reads dQ, arrives on dqEmpty,
// stores dQ by TMA; after the unit reads dV and dK and stores them. Every
// mbarrier wait that precedes tcgen05 operations is followed by
// fence::after_thread_sync; no wgmma or setmaxnreg anywhere. The kernel was
// never executed (no B200 here).
// RUN: fusion-opt %s --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// One allocation, relinquish and deallocation site; 16 + 16 + 32 MMAs;
// four commits (sFull, empty[s], dqFull, kvEmpty); 16 x16 loads (S^T and
// dP^T, 8 each), 12 x32 loads (dQ, dV, dK, 4 each) and a wait::ld per load
// group (8 + 12):
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.relinquish_alloc_permit' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.mma' %t.ptx | FileCheck %s --check-prefix=MMAS
// RUN: grep -c 'tcgen05.commit' %t.ptx | FileCheck %s --check-prefix=FOUR
// RUN: grep -c 'tcgen05.ld.sync.aligned.32x32b.x16' %t.ptx | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c 'tcgen05.ld.sync.aligned.32x32b.x32' %t.ptx | FileCheck %s --check-prefix=TWELVE
// RUN: grep -c 'tcgen05.wait::ld' %t.ptx | FileCheck %s --check-prefix=TWENTY
// ONE: {{^}}1{{$}}
// FOUR: {{^}}4{{$}}
// TWELVE: {{^}}12{{$}}
// SIXTEEN: {{^}}16{{$}}
// TWENTY: {{^}}20{{$}}
// MMAS: {{^}}64{{$}}
// PTXAS: ptxas ok: kunlun_kernel0 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @kunlun(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}
}

// The launch: 256 threads, one stage; the kernel on the sm_100a target,
// one CTA per SM, no register cap.
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_kernel0 blocks in (%{{.*}}) threads in (%c256, %{{.*}}) {{ *}}dynamic_shared_memory_size %c230416_i32
// CHECK: gpu.module @fusion_kernels [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx86">]
// CHECK-LABEL: gpu.func @kunlun_kernel0
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: nvvm.minctasm = 1
// CHECK-NOT: nvvm.maxnreg
// The ring (one stage) and K, V's: full (one TMA transaction), empty (one
// commit); then sFull, dqFull (one commit each), pFull, dqEmpty (the
// epilogue's 128 threads).
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c1
// CHECK: %[[SFULL:.*]] = nvgpu.mbarrier.create
// CHECK-NEXT: %[[PFULL:.*]] = nvgpu.mbarrier.create
// CHECK-NEXT: %[[DQFULL:.*]] = nvgpu.mbarrier.create
// CHECK-NEXT: %[[DQEMPTY:.*]] = nvgpu.mbarrier.create
// CHECK: nvgpu.mbarrier.init %[[SFULL]][%{{.*}}], %c1
// CHECK-NEXT: nvgpu.mbarrier.init %[[PFULL]][%{{.*}}], %c128
// CHECK-NEXT: nvgpu.mbarrier.init %[[DQFULL]][%{{.*}}], %c1
// CHECK-NEXT: nvgpu.mbarrier.init %[[DQEMPTY]][%{{.*}}], %c128
// All 512 columns (256 + D + Dv = 512), by warp 1.
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.alloc %{{.*}}, %[[COLS]] : !llvm.ptr<3>, i32
// CHECK-NEXT: nvvm.tcgen05.relinquish_alloc_permit
// CHECK: nvvm.tcgen05.fence <before>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: %[[FREE:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.dealloc %{{.*}}, %[[FREE]] : !llvm.ptr<6>, i32

// The MMA warp: after each wait a fence::after; dP^T's 16 MMAs before the
// wait on dqEmpty, S^T's 16 then the commit to sFull before the wait on
// pFull; the 32 of dV, dK, dQ, then the commits (empty[s], dqFull, and
// kvEmpty after the unit); the teardown barrier, then the deallocation.
// PTX: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// PTX-NEXT: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned
// PTX: tcgen05.fence::before_thread_sync
// PTX-NEXT: bar.sync
// PTX-NEXT: tcgen05.fence::after_thread_sync
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync
// PTX-COUNT-16: tcgen05.mma.cta_group::1.kind::f16
// PTX-NOT: tcgen05.commit
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync
// PTX-COUNT-16: tcgen05.mma.cta_group::1.kind::f16
// PTX-NOT: tcgen05.mma
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX-NOT: tcgen05.mma
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync
// PTX-COUNT-32: tcgen05.mma.cta_group::1.kind::f16
// PTX-NOT: tcgen05.mma
// PTX: tcgen05.commit
// PTX-NOT: tcgen05.mma
// PTX: tcgen05.commit
// PTX-NOT: tcgen05.mma
// PTX: tcgen05.commit
// PTX-NOT: tcgen05.mma
// PTX: bar.sync
// PTX-NEXT: tcgen05.fence::after_thread_sync
// PTX-NEXT: mov.b32 %r{{[0-9]+}}, 512;
// PTX-NEXT: tcgen05.dealloc.cta_group::1.sync.aligned.b32
// The epilogue: sFull, fence::after, S^T and dP^T 16 columns at a time
// with wait::ld; P^T, dS^T to the async proxy, fence::before, pFull; then
// dqFull, fence::after, dQ read, fence::before, dqEmpty, the TMA stores.
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync
// PTX: tcgen05.ld.sync.aligned.32x32b.x16.b32
// PTX: tcgen05.ld.sync.aligned.32x32b.x16.b32
// PTX-NOT: cvt.rn
// PTX: tcgen05.wait::ld.sync.aligned
// PTX: cvt.rn
// PTX: fence.proxy.async.shared::cta
// PTX: tcgen05.fence::before_thread_sync
// PTX: mbarrier.arrive.shared.b64
// PTX: mbarrier.try_wait.parity
// PTX: tcgen05.fence::after_thread_sync
// PTX: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX: tcgen05.wait::ld.sync.aligned
// PTX: tcgen05.fence::before_thread_sync
// PTX: mbarrier.arrive.shared.b64
// PTX: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
