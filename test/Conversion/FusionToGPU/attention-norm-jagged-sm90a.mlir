// FlashNormAttention with jagged q (fusion.norm_attention with offsets: q
// and the output [T, H, D], the statistics [T]): the gdpa kernel's window
// kernel and pooled window batches, then the cluster of the H heads takes
// 128-token windows; per window one item per sequence it overlaps and one
// for its tokens past offsets[B] (no keys or values loaded, the attention
// term dropped: out = rms_norm(ln_q) + q there). Every item normalizes the
// whole window (the row exchange over the cluster) and writes only its own
// rows: output by TMA where a group's 64 rows are all the item's, else 16
// bytes a thread; statistics rows in [lo, hi). Without sequences the k and
// v maps are null, q's and the output's are not.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: fusion-opt %s --fusion-plan-kernels=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// CHECK-LABEL: func.func @kunlun_jagged(
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %{{.*}}: memref<?x128x2x128xbf16>, %[[OFF:[^:]*]]: memref<?xi32>
// CHECK: %[[LEN:.*]] = memref.dim %[[OFF]], %c0
// CHECK: %[[B1:.*]] = arith.maxui %[[LEN]], %c1
// CHECK: %[[B:.*]] = arith.subi %[[B1]], %c1
// CHECK: %[[T:.*]] = memref.dim %[[Q]], %c0
// CHECK: %[[WINDOWS:.*]] = arith.ceildivui %[[T]], %c128
// CHECK: %[[HASW:.*]] = arith.cmpi ne, %[[WINDOWS]], %c0
// CHECK: %[[HASB:.*]] = arith.cmpi ne, %[[B]], %c0
// CHECK: %[[HASKV:.*]] = arith.andi %[[HASW]], %[[HASB]]
// CHECK: %[[WB:.*]], %{{.*}} = gpu.alloc async
// CHECK: %[[FILLED:.*]] = gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_jagged_kernel0_windows
// The maps of q and the output where there are windows, of k and v where
// there are sequences too.
// CHECK: %[[QO:.*]]:2 = scf.if %[[HASW]] -> (!llvm.ptr, !llvm.ptr)
// CHECK: memref.expand_shape %[[Q]] {{\[\[}}0, 1], [2], [3]] output_shape [1, %[[T]], 2, 128]
// CHECK: %[[KV:.*]]:2 = scf.if %[[HASKV]] -> (!llvm.ptr, !llvm.ptr)
// The statistics [T] as [1, T].
// CHECK: memref.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, %{{.*}}] : memref<?xf32> into memref<1x?xf32>
// Clusters of the 2 heads over the windows.
// CHECK: %[[FREE:.*]] = call @fusionrtMaxActiveClusters
// CHECK: %[[FREEI:.*]] = arith.index_cast %[[FREE]]
// CHECK: %[[CLUSTERS:.*]] = arith.minui %[[WINDOWS]], %[[FREEI]]
// CHECK: gpu.launch_func async [%[[FILLED]]] @fusion_kernels::@kunlun_jagged_kernel0 clusters in (%c2, %c1, %c1)
// CHECK-SAME: args(%[[QO]]#0 : !llvm.ptr, %[[KV]]#0 : !llvm.ptr, %[[KV]]#1 : !llvm.ptr, %[[QO]]#1 : !llvm.ptr, %[[B]] : index, %[[T]] : index, %c2 : index, %[[OFF]] : memref<?xi32>, %[[WB]] : memref<?xi32>
func.func @kunlun_jagged(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>,
    %w: tensor<256xbf16>, %bb: tensor<256xbf16>, %g: tensor<256xbf16>) -> (tensor<?x2x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<?xi32>) ln_weight(%w : tensor<256xbf16>) ln_bias(%bb : tensor<256xbf16>) rms_weight(%g : tensor<256xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
  return %o, %m, %r, %rr : tensor<?x2x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// i64 offsets, 3 heads, L_kv = 100, no parameters.
// CHECK-LABEL: func.func @small_jagged(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@small_jagged_kernel0_windows
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@small_jagged_kernel0 clusters in (%c3, %c1, %c1)
func.func @small_jagged(%q: tensor<?x3x128xbf16>, %k: tensor<?x100x3x128xbf16>, %v: tensor<?x100x3x128xbf16>, %off: tensor<?xi64>)
    -> (tensor<?x3x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<?xi64>)
      {activation = #fusion.activation<silu>, scale = 0.125 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-06 : f32}
      : tensor<?x3x128xbf16>, tensor<?x100x3x128xbf16>, tensor<?x100x3x128xbf16> -> tensor<?x3x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
  return %o, %m, %r, %rr : tensor<?x3x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// The kernel. Producer: per window (scf.for over the cluster's windows) a
// loop over its sequences up to B inclusive (scf.while); the stage's
// barrier expects K and V's 64 KB, none for the item of batch B (the tokens
// past offsets[B]), which loads K and V only when its batch is below B;
// each consumer group's barrier expects its 64 Q rows (16 KB, two boxes).
// CHECK-LABEL: gpu.func @kunlun_jagged_kernel0(
// CHECK: scf.for
// CHECK: scf.while
// CHECK: %[[BYTES:.*]] = arith.select %[[KEYS:.*]], %c65536, %c0 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %[[BYTES]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c16384
// CHECK-COUNT-2: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c16384
// CHECK-COUNT-2: nvgpu.tma.async.load
// CHECK: scf.if %[[KEYS]] {
// CHECK-COUNT-8: nvgpu.tma.async.load
// Consumers: the same loops; the fragment positions rebuilt per item from
// an opaque zero; the LayerNorm's statistics over the cluster (st.async),
// saved for the item's rows only (uge lo, ult hi).
// CHECK: scf.for
// CHECK: scf.while
// CHECK: llvm.inline_asm has_side_effects "mov.u32 $0, 0;"
// CHECK: nvvm.inline_ptx "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// CHECK: %[[LO:.*]] = arith.cmpi uge, %[[ROW:.*]], %{{.*}} : index
// CHECK: arith.andi %[[LO]], %{{.*}} : i1
// CHECK: memref.store %{{.*}}, %{{.*}}[%c0, %[[ROW]]] : memref<?x?xf32>
// Two MMAs, each starting fresh (its first k16 overwrites: scale-d zero):
// S = ln_q K^T with ln_q in registers (wgmma's register form), O = P V
// with P from the rows, its second K step by nvgpu; h = O + ln_q, or ln_q
// alone for the tail item.
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}p, 1, 1, 0;\0A}"
// CHECK: nvvm.wgmma.mma_async {{.*}} D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: nvgpu.warpgroup.mma %{{.*}} {transposeB}
// CHECK: %[[TAIL:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-COUNT-16: arith.select %[[TAIL]], %{{.*}}, %{{.*}} : vector<2xf32>
// The output: TMA where the group's rows are all the item's, else 16-byte
// stores of the item's rows into the flat output.
// CHECK: nvgpu.tma.async.store
// CHECK: vector.store %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK-LABEL: gpu.func @kunlun_jagged_kernel0_windows(

}

// Both assemble. The dense twin of kunlun_jagged spills 16 bytes (q, ln_q
// and both accumulators in registers); the window and sequence loops' state
// adds 20 (56 before the fragment positions were rebuilt per item).
// PTXAS-DAG: ptxas ok: kunlun_jagged_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-3][0-9]$|4[0-8]$}}
// PTXAS-DAG: ptxas ok: kunlun_jagged_kernel0_windows registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: small_jagged_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-3][0-9]$|4[0-8]$}}
// PTXAS-DAG: ptxas ok: small_jagged_kernel0_windows registers={{[0-9]+}} spills=0

// The plan fusion-plan-kernels reports is the one the lowering builds.
// PLAN: remark: attention kernel on sm_90a: work items of 128 query tokens (2 consumer warpgroups of 64 rows) over 128-token windows, one item per sequence the window overlaps and one for its tokens past offsets[B], each taken by a cluster of 2 CTAs, one per head
// PLAN: remark: attention kernel on sm_90a: {{.*}} each taken by a cluster of 3 CTAs
