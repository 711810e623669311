// REQUIRES: ptxas
// Test the pair of CTAs along M sharing B's tiles (cluster_m = 2,
// fusion-plan-kernels multicast, on by default): the host launches clusters of two on
// min(row pairs x column blocks, co-resident pairs) clusters
// (fusionrtMaxActiveClusters), and a dynamic M's other body (small-M) in
// clusters of one. In the kernel each stage's empty barrier waits for the
// 256 consumer threads and the peer's 8 consumer warps; the mbarrier inits
// are fenced and a cluster barrier passed before any peer may multicast;
// each producer loads its A tile and every other 64-column box of B, the
// boxes multicast into both CTAs (mask 0b11); a consumer warp's lane 0
// arrives on the peer's empty barrier (mapa, release at CTA scope) after
// the warp's own releases.
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s "--fusion-to-gpu=format=isa" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: linear_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: lazy_prenorm_dynamic_kernel0 registers=168 spills=0
// PTXAS-NOT: FAILED
// RUN: grep -o "tile.mbarrier::complete_tx::bytes.multicast::cluster" %t.isa.mlir | wc -l | FileCheck %s --check-prefix=PTX
// PTX: {{^ *}}4{{$}}

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @linear
// CHECK: %[[RESIDENT:.*]] = call @fusionrtMaxActiveClusters(%{{.*}}, %c2_i32, %c384_i32, %c230912_i32)
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@linear_kernel0 clusters in (%c2{{.*}}, %c1{{.*}}, %c1{{.*}}) blocks in
func.func @linear(%x: tensor<65536x1024xbf16>, %w: tensor<2048x1024xbf16>) -> tensor<65536x2048xbf16> {
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<65536x1024xbf16>, tensor<2048x1024xbf16> -> tensor<65536x2048xbf16>
  return %y : tensor<65536x2048xbf16>
}

// CHECK-LABEL: func.func @lazy_prenorm_dynamic
// CHECK: call @fusionrtMaxActiveClusters(%{{.*}}, %c2_i32,
// CHECK: %[[SMALL:.*]] = arith.cmpi ule
// CHECK: %[[PAIRS:.*]] = arith.select %[[SMALL]], %c1{{.*}}, %c2{{.*}} : index
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@lazy_prenorm_dynamic_kernel0 clusters in (%[[PAIRS]], %c1{{.*}}, %c1{{.*}})
func.func @lazy_prenorm_dynamic(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs}
      : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}

// CHECK-LABEL: gpu.func @linear_kernel0
// CHECK: nvgpu.mbarrier.init %[[EMPTY:.*]][%c0{{.*}}], %c264, predicate
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK: nvvm.cluster.wait {aligned}
// The producer: A, then two of B's four boxes, multicast.
// CHECK: nvgpu.tma.async.load %{{.*}} to %{{.*}} :
// CHECK: nvgpu.tma.async.load %{{.*}} to %{{.*}} multicast_mask = %c3_i16
// CHECK: nvgpu.tma.async.load %{{.*}} to %{{.*}} multicast_mask = %c3_i16
// CHECK-NOT: nvgpu.tma.async.load
// The consumers' release: this CTA's barrier, then the peer's.
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: nvvm.bar.warp.sync
// CHECK: nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<7>
// CHECK-LABEL: gpu.func @lazy_prenorm_dynamic_kernel0
// The small-M body (first) shares nothing, the main body its ring.
// CHECK: nvgpu.mbarrier.init %{{.*}}, %c256, predicate
// CHECK: nvgpu.mbarrier.init %{{.*}}, %c264, predicate
