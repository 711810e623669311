// REQUIRES: ptxas
// Test the structure of the sm_100a (tcgen05) norm epilogues
// (Gemm/GemmTcgen05Epilogue.cpp), over a row one CTA holds: the epilogue
// warpgroup reads the accumulator stage in passes, scf.for loops over the
// 64-column chunks, each chunk's two tcgen05.ld followed by wait::ld before
// the values are used:
//   pass 1  the element-wise pieces (col_bias, residual), written back into
//           the stage (two tcgen05.st, then wait::st in the same chunk),
//           and the row sums as four f32 totals (the sm_90a quad's);
//   pass 2  (LayerNorm) the centered sum of squares, reading only;
//   last    normalize, weight, bias, store; after its last chunk's loads
//           (c == chunks - 1) fence::before_thread_sync and the arrival on
//           tmemEmpty, and no tensor-memory access after it.
// rstd (and mean) are stored once per row, by its thread (inside M).
// @rms: N = 256, two accumulator stages, four k16 MMAs per K step.
// @ln: N = 512, one stage of all 512 columns, two MMAs of N = 256 per k16
// (the second one's B 32768 bytes = 2048 descriptor units further, its
// accumulator 256 columns further).
// @ln_cluster: N = 1032 over a cluster of 3 CTAs of 384 columns (the last
// one's 264 inside N; two MMAs of N = 192 per k16): the DSMEM slot barriers set up before a cluster
// barrier; pass 1 the slice's sum, pass 2 its centered squares around the
// slice mean (over its columns inside N); both partials st.async'd to every
// peer (each thread its row: 3 x 128 x 4 = 1536 bytes per round), the
// peers' merged in rank order (Chan), the statistics written by rank 0.
// Never executed (no B200 here).
// RUN: fusion-opt %s -split-input-file --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s -split-input-file --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// In the PTX of the three (the loops' blocks are laid out in any order, so
// by count): a pair of loads and one wait::ld per pass (rms 2 passes, ln
// and ln_cluster 3), pass 1's two stores and one wait::st (rms, ln: they
// have a residual or col_bias), one release each.
// RUN: grep -c 'tcgen05.ld.sync.aligned.32x32b.x32.b32' %t.ptx | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c 'tcgen05.wait::ld.sync.aligned' %t.ptx | FileCheck %s --check-prefix=EIGHT
// RUN: grep -c 'tcgen05.st.sync.aligned.32x32b.x32.b32' %t.ptx | FileCheck %s --check-prefix=FOUR
// RUN: grep -c 'tcgen05.wait::st.sync.aligned' %t.ptx | FileCheck %s --check-prefix=TWO
// TWO: {{^}}2{{$}}
// FOUR: {{^}}4{{$}}
// EIGHT: {{^}}8{{$}}
// SIXTEEN: {{^}}16{{$}}

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @rms(%a: tensor<1000x512xbf16>, %b: tensor<512x256xbf16>, %r: tensor<1000x256xbf16>, %cb: tensor<256xbf16>, %w: tensor<256xbf16>) -> (tensor<1000x256xbf16>, tensor<1000xf32>) {
  %y, %s = fusion.fused_matmul %a, %b residual(%r : tensor<1000x256xbf16>) col_bias(%cb : tensor<256xbf16>) norm_weight(%w : tensor<256xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x256xbf16> -> tensor<1000x256xbf16>, tensor<1000xf32>
  return %y, %s : tensor<1000x256xbf16>, tensor<1000xf32>
}
}

// CHECK-LABEL: gpu.func @rms_kernel0
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<?x?xbf16>, %[[RES:[a-z0-9]+]]: memref<?x?xbf16>, %[[CB:[a-z0-9]+]]: memref<?xbf16>, %[[W:[a-z0-9]+]]: memref<?xbf16>, %[[RSTD:[a-z0-9]+]]: memref<?xf32>
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-NEXT: %[[TEMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.mbarrier.init %[[TEMPTY]][%{{.*}}], %c128
// CHECK: llvm.mlir.constant(512 : i32) : i32
// CHECK: nvvm.tcgen05.alloc
// CHECK: %[[IDESC:.*]] = llvm.mlir.constant(138478736 : i32) : i32
// CHECK-COUNT-4: nvvm.tcgen05.mma %{{.*}}, %{{.*}}, %{{.*}}, %[[IDESC]], %{{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>}
// CHECK-NOT: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.dealloc
// The epilogue: the stage's tile landed.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TFULL]][%[[STAGE:.*]]], %{{.*}}, %{{.*}}
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// Pass 1 over the 4 chunks: loads, wait::ld, the pieces, written back,
// wait::st.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4{{.*}} iter_args(%{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}) -> (f32, f32, f32, f32)
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// The accumulator, zeros without a K step:
// CHECK-NEXT: arith.constant dense<0.000000e+00> : vector<32xf32>
// CHECK-NEXT: arith.select
// CHECK-NEXT: arith.select
// CHECK-NOT: nvvm.tcgen05.
// CHECK: vector.load %[[CB]]
// CHECK: vector.load %[[RES]]
// CHECK-NOT: nvvm.tcgen05.
// CHECK: nvvm.tcgen05.st
// CHECK-NOT: nvvm.tcgen05.
// CHECK: nvvm.tcgen05.st
// CHECK-NOT: nvvm.tcgen05.
// CHECK: vector.reduction <add>
// CHECK-NOT: nvvm.tcgen05.
// CHECK: nvvm.tcgen05.wait <store>
// CHECK-NEXT: scf.yield
// The rstd, stored by the row's thread.
// CHECK: math.rsqrt
// CHECK: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %[[RSTD]]
// The last pass: loads, wait::ld; after the last chunk's, the release.
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %c4
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[C]], %c3
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[TEMPTY]][%[[STAGE]]]
// CHECK-NEXT: }
// The row pass 1 wrote back (its K = 0 zeros already in it): no select.
// CHECK-NEXT: vector.shuffle
// CHECK-NOT: nvvm.tcgen05.
// CHECK: vector.load %[[W]]
// CHECK-NOT: nvvm.tcgen05.
// CHECK: nvgpu.tma.async.store
// CHECK-NOT: nvvm.tcgen05.
// CHECK: gpu.return

// PTX-LABEL: .entry rms_kernel0
// PTX-COUNT-4: tcgen05.mma.cta_group::1.kind::f16
// PTX-NOT: tcgen05.mma
// PTX-DAG: tcgen05.wait::st.sync.aligned;
// PTX-DAG: rsqrt.approx
// PTX-DAG: tcgen05.fence::before_thread_sync;{{[[:space:]]+}}mbarrier.arrive.shared.b64

// -----

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @ln(%a: tensor<1000x512xbf16>, %b: tensor<512x512xbf16>, %r: tensor<1000x512xbf16>, %w: tensor<512xbf16>, %nb: tensor<512xbf16>) -> (tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b residual(%r : tensor<1000x512xbf16>) norm_weight(%w : tensor<512xbf16>) norm_bias(%nb : tensor<512xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x512xbf16> -> tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %s : tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
}

// CHECK-LABEL: gpu.func @ln_kernel0
// CHECK-SAME: %[[MEAN:[a-z0-9]+]]: memref<?xf32>, %[[RSTD:[a-z0-9]+]]: memref<?xf32>
// One accumulator stage: single barriers.
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[TEMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.init %[[TEMPTY]][%{{.*}}], %c128
// CHECK: llvm.mlir.constant(512 : i32) : i32
// CHECK: nvvm.tcgen05.alloc
// Per k16 two MMAs of N = 256 (the same idesc), the second one into the
// columns from 256 with B 2048 units further.
// CHECK: %[[ACC:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<6>
// CHECK: %[[I0:.*]] = llvm.mlir.constant(138478736 : i32) : i32
// CHECK-NEXT: %[[I1:.*]] = llvm.mlir.constant(138478736 : i32) : i32
// CHECK-NEXT: %[[BOFF:.*]] = llvm.mlir.constant(2048 : i64) : i64
// CHECK-NEXT: %[[B1:.*]] = llvm.add %[[B0:.*]], %[[BOFF]] : i64
// CHECK-NEXT: %[[COL256:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[COL256I:.*]] = arith.index_cast %[[COL256]] : index to i32
// CHECK-NEXT: %[[ACCI:.*]] = llvm.ptrtoint %[[ACC]] : !llvm.ptr<6> to i32
// CHECK-NEXT: %[[ACC1I:.*]] = llvm.add %[[ACCI]], %[[COL256I]] : i32
// CHECK-NEXT: %[[ACC1:.*]] = llvm.inttoptr %[[ACC1I]] : i32 to !llvm.ptr<6>
// CHECK: nvvm.tcgen05.mma %[[ACC]], %[[A0:.*]], %[[B0]], %[[I0]], %{{.*}}
// CHECK-NEXT: nvvm.tcgen05.mma %[[ACC1]], %[[A0]], %[[B1]], %[[I1]], %{{.*}}
// CHECK-COUNT-3: nvvm.tcgen05.mma %[[ACC1]], %{{.*}}, %{{.*}}, %[[I1]], %{{.*}}
// CHECK-NOT: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.dealloc
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TFULL]][%[[STAGE:.*]]], %{{.*}}, %{{.*}}
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// Pass 1 over the 8 chunks: the residual added, written back; the sum.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// CHECK-COUNT-2: nvvm.tcgen05.st
// CHECK-NOT: nvvm.tcgen05.
// CHECK: nvvm.tcgen05.wait <store>
// CHECK-NEXT: scf.yield
// The mean; pass 2, reading only: the centered squares (columns past N
// selected out).
// CHECK: %[[MEANV:.*]] = arith.divf
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// CHECK-NEXT: vector.shuffle
// CHECK-NOT: nvvm.tcgen05.
// CHECK: arith.subf
// CHECK: arith.select
// CHECK-NOT: nvvm.tcgen05.
// CHECK: scf.yield
// CHECK: %[[RSTDV:.*]] = math.rsqrt
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[MEANV]], %[[MEAN]]
// CHECK-NEXT: memref.store %[[RSTDV]], %[[RSTD]]
// The last pass and the release.
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %c8
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[C]], %c7
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.ld
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: nvvm.tcgen05.wait <load>
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[TEMPTY]][%[[STAGE]]]
// CHECK-NEXT: }
// CHECK-NOT: nvvm.tcgen05.
// CHECK: gpu.return

// PTX-LABEL: .entry ln_kernel0
// PTX-COUNT-8: tcgen05.mma.cta_group::1.kind::f16
// PTX-NOT: tcgen05.mma
// PTX-DAG: tcgen05.wait::st.sync.aligned;
// PTX-DAG: rsqrt.approx
// PTX-DAG: tcgen05.fence::before_thread_sync;{{[[:space:]]+}}mbarrier.arrive.shared.b64

// -----

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @ln_cluster(%a: tensor<1000x512xbf16>, %b: tensor<512x1032xbf16>, %w: tensor<1032xbf16>, %nb: tensor<1032xbf16>) -> (tensor<1000x1032xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b norm_weight(%w : tensor<1032xbf16>) norm_bias(%nb : tensor<1032xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x1032xbf16> -> tensor<1000x1032xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %s : tensor<1000x1032xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
}

// CHECK-LABEL: gpu.func @ln_cluster_kernel0
// CHECK-SAME: %[[MEAN:[a-z0-9]+]]: memref<?xf32>, %[[RSTD:[a-z0-9]+]]: memref<?xf32>
// CHECK-SAME: nvvm.minctasm = 1 : i32
// The slots' barriers: 2 rounds x 2 tile parities, an arrival each (the
// store leader's, with the bytes); visible cluster-wide before the cluster
// barrier, which every thread passes before any role.
// CHECK: %[[SLOTS:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK-COUNT-4: nvgpu.mbarrier.init %[[SLOTS]][%{{.*}}], %c1
// CHECK: nvvm.tcgen05.alloc
// CHECK: gpu.barrier
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.tcgen05.dealloc
// Pass 1 (6 chunks of the 384 columns): the sum; the slice mean over the
// slice's columns inside N (at least 1).
// CHECK: scf.for %{{.*}} = %{{.*}} to %c6{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: nvvm.tcgen05.wait <load>
// CHECK-NOT: nvvm.tcgen05.st
// CHECK: scf.yield
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[SLICE_MEAN:.*]] = arith.divf
// Pass 2: the centered squares around the slice mean.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c6{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: nvvm.tcgen05.wait <load>
// CHECK: arith.subf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: scf.yield
// Round 0 (the slice means) and round 1 (the centered sums): armed by the
// store leader for 3 x 128 x 4 bytes, st.async to each of the 3 peers.
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[SLOTS]][%{{.*}}], %c1536
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3
// CHECK: nvvm.mapa
// CHECK: nvvm.inline_ptx "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[SLOTS]][%{{.*}}], %c1536
// CHECK: nvvm.inline_ptx "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// Both rounds waited for, then the merge over the 3 peers.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[SLOTS]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[SLOTS]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: %[[ROW_MEAN:.*]] = arith.divf
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: %[[RSTDV:.*]] = math.rsqrt
// Statistics by rank 0 (inside M).
// CHECK: %[[RANK0:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK-NEXT: %[[WRITES:.*]] = arith.andi %{{.*}}, %[[RANK0]]
// CHECK-NEXT: scf.if %[[WRITES]] {
// CHECK-NEXT: memref.store %[[ROW_MEAN]], %[[MEAN]]
// CHECK-NEXT: memref.store %[[RSTDV]], %[[RSTD]]
// The last pass releases the stage after its last chunk's loads.
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %c6
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[C]], %c5
// CHECK: nvvm.tcgen05.wait <load>
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvgpu.mbarrier.arrive
// CHECK: nvgpu.tma.async.store
// CHECK: gpu.return

// PTX-LABEL: .entry ln_cluster_kernel0
// PTX: .minnctapersm 1
// PTX: barrier.cluster.arrive.aligned;
// PTX-NEXT: barrier.cluster.wait.aligned;
// Two MMAs of N = 192 per k16 (the 384 columns split at the third box of
// B: idesc 0x08310490 = 137430160).
// PTX: mov.b32 %r{{[0-9]+}}, 137430160;
// PTX-COUNT-8: tcgen05.mma.cta_group::1.kind::f16
// PTX-NOT: tcgen05.mma
// PTX-DAG: mapa.shared::cluster
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// PTX-DAG: tcgen05.fence::before_thread_sync;{{[[:space:]]+}}mbarrier.arrive.shared.b64

// PTXAS: ptxas ok: rms_kernel0 registers={{[0-9]+}} spills=0
// PTXAS: ptxas ok: ln_kernel0 registers={{[0-9]+}} spills=0
// PTXAS: ptxas ok: ln_cluster_kernel0 registers={{[0-9]+}} spills=0
