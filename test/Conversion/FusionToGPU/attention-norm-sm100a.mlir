// REQUIRES: ptxas
// Test the structure of the sm_100a FlashNormAttention kernel
// (Attention/AttentionTcgen05Norms.cpp with the MMA warp of
// AttentionTcgen05Kernel.cpp) on fusion.norm_attention over 2 heads, D = 128,
// L_kv = 128, with the norms' parameters: a cluster of the 2 heads' CTAs of
// 256 threads; tensor memory for S, O and the row's q and ln_q (128 + 128 +
// 64 + 64 = 384 columns, 512 allocated), allocated and freed once; the MMA
// warp waits full[s] and lnFull (ln_q written over Q) before S, pFull before
// O, each wait followed by fence::after_thread_sync, and commits only to
// sFull and oFull (the stage goes back to the producer from the epilogue,
// once the output's TMA stores read it); the epilogue keeps q and ln_q in
// tensor memory (tcgen05.st, wait::st before the arrival on lnFull, after
// fence.proxy.async and fence::before_thread_sync) and exchanges its row's
// statistics through DSMEM (st.async, the sm_90a kernel's exchange, a row
// per thread). No wgmma or setmaxnreg. Never executed: no B200 here.
// RUN: fusion-opt %s --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.commit' %t.ptx | FileCheck %s --check-prefix=TWO
// RUN: grep -c 'tcgen05.mma' %t.ptx | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c 'tcgen05.st.sync' %t.ptx | FileCheck %s --check-prefix=FOUR
// ONE: {{^}}1{{$}}
// TWO: {{^}}2{{$}}
// FOUR: {{^}}4{{$}}
// SIXTEEN: {{^}}16{{$}}
// PTXAS: ptxas ok: flash_kernel0 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @flash(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %a: tensor<256xbf16>, %b: tensor<256xbf16>, %g: tensor<256xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%a : tensor<256xbf16>) ln_bias(%b : tensor<256xbf16>) rms_weight(%g : tensor<256xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o, %m, %r, %rr : tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
}

// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@flash_kernel0 clusters in (%c2{{.*}}, %c1{{.*}}, %c1{{.*}}) blocks in (%{{.*}}) threads in (%c256,
// CHECK-LABEL: gpu.func @flash_kernel0
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// The ring (empty: count 1), sFull, pFull (128), oFull, lnFull (128).
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-NEXT: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c1
// CHECK: %[[SFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[PFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[OFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.init %[[PFULL]][%{{.*}}], %c128
// CHECK: %[[LNFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.init %[[LNFULL]][%{{.*}}], %c128
// The exchange's slot barriers, then the allocation (512 columns) and the
// cluster barrier (no peer's st.async before the slots' barriers exist).
// CHECK: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 6>
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.alloc %{{.*}}, %[[COLS]]
// CHECK: nvvm.cluster.arrive
// CHECK-NEXT: nvvm.cluster.wait
// The MMA warp: full[s], lnFull, S, commit (sFull); pFull, O, commit
// (oFull); no commit to empty[s].
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvgpu.mbarrier.try_wait.parity %[[LNFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-COUNT-8: nvvm.tcgen05.mma
// CHECK: nvgpu.mbarrier.get %[[SFULL]]
// CHECK: nvvm.tcgen05.commit
// CHECK: nvgpu.mbarrier.try_wait.parity %[[PFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-COUNT-8: nvvm.tcgen05.mma
// CHECK-NOT: nvgpu.mbarrier.get %[[EMPTY]]
// CHECK: nvgpu.mbarrier.get %[[OFULL]]
// CHECK-NEXT: llvm.inttoptr
// CHECK-NEXT: nvvm.tcgen05.commit
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c160_i32
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvvm.tcgen05.dealloc
// The epilogue: full[s]; q's sums; the LayerNorm's two rounds through
// DSMEM; ln_q over Q and q, ln_q into tensor memory; lnFull.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: st.async
// CHECK: st.async
// CHECK: nvvm.tcgen05.st
// CHECK: nvvm.tcgen05.wait <store>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK: nvgpu.mbarrier.arrive %[[LNFULL]]
// P: sFull, S read, P over the row, pFull.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[SFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.fence <before>
// CHECK: nvgpu.mbarrier.arrive %[[PFULL]]
// The output: oFull; the RMSNorm's round; the stores; the stage released
// once they read it.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[OFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: st.async
// CHECK: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: nvvm.tcgen05.fence <before>
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c160_i32

// PTX: .target sm_100a
// PTX: tcgen05.wait::st.sync.aligned;
// PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
