// The attention kernel family: a dense fusion.gdpa becomes one persistent
// kernel (a TMA producer warp and two wgmma consumer warpgroups: S = Q K^T,
// P = act(scale S) through shared memory, O = P V, TMA stores) launched on
// the function's stream with 4-D tensor maps; without work items, no maps.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// RUN: FileCheck %s --check-prefix=PARAMS < %t.isa.mlir
// The tiles' base is CUDA's dynamic shared memory (after every static, the
// mbarriers), not a 1-byte static that ptxas lays out before them
// (fusion-extern-dynamic-shared-memory).
// RUN: FileCheck %s --check-prefix=DYNAMIC < %t.isa.mlir
// RUN: FileCheck %s --check-prefix=NOSTATIC < %t.isa.mlir
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=UNSCALED
// DYNAMIC: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// NOSTATIC-NOT: .b8 __dynamic_shmem__0;
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Kunlun's attention: D = Dv = L_kv = 128, two stages of (Q, K, V) in 225 KB.
// CHECK-LABEL: func.func @kunlun(
// CHECK-SAME: %[[Q:.*]]: memref<?x?x2x128xbf16>, %[[K:.*]]: memref<?x128x2x128xbf16>, %[[V:.*]]: memref<?x128x2x128xbf16>, %[[O:.*]]: memref<?x?x2x128xbf16>)
// CHECK-DAG: %[[B:.*]] = memref.dim %[[Q]], %c0
// CHECK-DAG: %[[L:.*]] = memref.dim %[[Q]], %c1
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[L]], %c128
// CHECK: %[[ITEMS:.*]] = arith.muli %{{.*}}, %[[TILES]]
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[ITEMS]], %c0
// CHECK: %[[MAPS:.*]]:4 = scf.if %[[ANY]] -> (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK: nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c128, %c1, %c64] : memref<*xbf16> -> <tensor = memref<1x128x1x64xbf16, 3>, swizzle = swizzle_128b
// CHECK: nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c64, %c1, %c64]
// CHECK: } else {
// CHECK: %[[GRID:.*]] = arith.maxui %{{.*}}, %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_kernel0 blocks in (%[[GRID]], %c1, %c1) threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c230400_i32 args(%[[MAPS]]#0 : !llvm.ptr, %[[MAPS]]#1 : !llvm.ptr, %[[MAPS]]#2 : !llvm.ptr, %[[MAPS]]#3 : !llvm.ptr, %[[B]] : index, %[[L]] : index, %c2 : index)
func.func @kunlun(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// L_kv = 200 padded to 256, D = 128, Dv = 64: one stage (128 KB of Q, K, V
// and the groups' 16 KB output buffers, [64, Dv] each: P stays in
// registers); S is 64 x 256, O is 64 x 64.
// CHECK-LABEL: func.func @long_kv(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@long_kv_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c148480_i32
func.func @long_kv(%q: tensor<?x512x1x128xf16>, %k: tensor<?x200x1x128xf16>, %v: tensor<?x200x1x64xf16>) -> tensor<?x512x1x64xf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x512x1x128xf16>, tensor<?x200x1x128xf16>, tensor<?x200x1x64xf16> -> tensor<?x512x1x64xf16>
  return %o : tensor<?x512x1x64xf16>
}

// FlashNormAttention (fusion.norm_attention, formed by fusion-fuse from the
// block as written: test/Pipelines/attention-block-sm90a.mlir): a cluster
// of the 4 heads' CTAs, one item per cluster = 128 tokens; the parameters
// and the statistics follow the tensor maps.
// CHECK-LABEL: func.func @flash_norm(
// CHECK: call @fusionrtMaxActiveClusters
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@flash_norm_kernel0 clusters in (%c4, %c1, %c1) blocks in (%{{.*}}, %c1, %c1) threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c211456_i32 args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?x?xf32>, {{.*}} : memref<?x?xf32>, {{.*}} : memref<?x?xf32>)
func.func @flash_norm(%q: tensor<?x?x4x128xbf16>, %k: tensor<?x128x4x128xbf16>, %v: tensor<?x128x4x128xbf16>,
                      %lnw: tensor<512xbf16>, %lnb: tensor<512xbf16>, %rmsw: tensor<512xbf16>)
    -> (tensor<?x?x4x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<512xbf16>) ln_bias(%lnb : tensor<512xbf16>) rms_weight(%rmsw : tensor<512xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<?x128x4x128xbf16>
      -> tensor<?x?x4x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o, %m, %r, %rr : tensor<?x?x4x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

}

// The kernels: Kunlun's S accumulator 64 x 128, then the activation
// (gelu_tanh's tanh as llvm.tanh with afn: tanh.approx.f32), rounded into
// registers that are O = P V's A (wgmma's register form, inline PTX: no
// trip of P through shared memory, no fence or barrier before the MMA),
// then the TMA store; the long key/value one's S 64 x 256 and O 64 x 64.
// Both MMAs start fresh: their first k16 overwrites the accumulator
// (scale-d zero; in the register form the predicate set from 0), so no
// registers are zeroed before them (ptxas would move zeros into O's
// registers and inject a warpgroup.arrive, C7519); K is a K-major B
// ("col"), V an N-major one (trans-b 1).
// CHECK-LABEL: gpu.module @fusion_kernels
// CHECK: gpu.func @kunlun_kernel0({{.*}}) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.maxnreg = 168 : i32, nvvm.maxntid = array<i32: 384, 1, 1>}
// CHECK-NOT: nvgpu.warpgroup.mma.init.accumulator
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: llvm.intr.tanh(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}p, 1, 1, 1;\0A}"
// CHECK-COUNT-7: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}p, 1, 1, 1;\0A}"
// CHECK: nvgpu.tma.async.store
// CHECK: gpu.func @long_kv_kernel0(
// CHECK-NOT: nvgpu.warpgroup.mma.init.accumulator
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <zero>]
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// The FlashNormAttention consumer gives its stage back without waiting on
// its output's TMA store: the group's other threads arrive on empty[s] at
// the item's end; the leader, which issued the store, waits for it to read
// the rows only in its next item, after the LayerNorm's exchange (the
// exchange barriers: 12), and arrives then on the previous position's
// stage; after its last item, once every store is complete.
// CHECK: gpu.func @flash_norm_kernel0(
// CHECK: nvgpu.mbarrier.try_wait.parity %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}} : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 12>
// CHECK: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY:[0-9]+]][%{{.*}}] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.tma.async.store
// CHECK: nvgpu.tma.async.store
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: }
// CHECK-NOT: nvvm.cp.async.bulk.wait_group
// CHECK: scf.if
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[EMPTY]][
// CHECK: scf.yield
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK-NOT: {read}
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]][
// CHECK: gpu.return

// FlashNormAttention (bf16) takes gelu_tanh's constant out of P: with scale
// 1, P = x + x tanh(u) (no x scale / 2 before it), and h = O 0.5 + ln_q.
// UNSCALED-LABEL: gpu.func @flash_norm_kernel0(
// UNSCALED: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : vector<2xf32>
// UNSCALED: %[[T:.*]] = llvm.intr.tanh(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
// UNSCALED-NEXT: %{{.*}} = math.fma %[[X:.*]], %[[T]], %[[X]] : f32
// UNSCALED: math.fma %{{.*}}, %[[HALF]], %{{.*}} : vector<2xf32>
// UNSCALED: gpu.return

// The kernels assemble for sm_90a without spills (the FlashNormAttention
// kernel keeps q and ln_q, 32 registers each, beside both accumulators: its
// fragment positions are rebuilt per item, and its exchange barriers are
// indexed by a warp-uniform group number; with one from %tid.x it spilled
// 156 bytes and ptxas serialized its wgmmas).
// PTXAS-DAG: ptxas ok: kunlun_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: long_kv_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: flash_norm_kernel0 registers={{[0-9]+}} spills=0

// Per kernel: setmaxnreg both ways, 4-D TMA loads and stores, wgmma of
// S (m64n128, K = D in 8 steps of 16) and O.
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX-DAG: fence.proxy.async.shared::cta
// PTX-DAG: tanh.approx.f32
// The FlashNormAttention kernel's row exchange: st.async into the peers' slots.
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// PTX-DAG: barrier.cluster.arrive
// Its two consumer groups exchange their own rows (the group's number,
// warp-uniform by a shuffle from lane 0, picks its barriers) and take turns
// at the MMAs: each arrives on the other's turn barrier (4 + c) after its
// O = P V, and waits on its own before its S = ln_q K^T.
// PTX-DAG: shfl.sync.idx.b32 {{.*}}, 0, 31, -1;
// PTX-DAG: bar.arrive
// PTX-DAG: bar.sync {{.*}}, 256;

// The FlashNormAttention kernel widens its norm parameters into shared memory
// once per CTA and reads them as f32 pairs there; no item reloads them from
// global memory 16 bits at a time.
// PARAMS: ld.shared.v2.b32
// PARAMS-NOT: ld.global.b16

// Every 16-bit pair the kernels write (P, ln_q, the outputs) is rounded by
// one packed conversion, never as two scalar ones.
// RUN: FileCheck %s --check-prefix=PACKED < %t.isa.mlir
// PACKED-NOT: cvt.rn.{{(bf16|f16)}}.f32
// PACKED: cvt.rn.{{(bf16|f16)}}x2.f32
// PACKED-NOT: cvt.rn.{{(bf16|f16)}}.f32
