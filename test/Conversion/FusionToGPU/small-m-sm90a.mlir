// REQUIRES: ptxas
// Test the small-M kernel (fusion.kernel_small_m) on sm_90a: a GEMM planned
// for a dynamic token count becomes one kernel with two bodies, the main
// tiles of 256 columns and the small-M tiles of 64, picked by its last
// argument; the host computes that flag from M (the main kernel's tiles
// x 2 <= the SMs), and the grid and dynamic shared memory of the body it
// picks. Both bodies assemble with ptxas without spills, for a plain
// GEMM, Lazy Pre-Norm with a bias and a per-head norm (tiles of one head).
// (The host IR is checked with multicast=false: the main body of a pair
// along M and its launch in clusters are multicast-sm90a.mlir's.)
// RUN: fusion-opt %s "--fusion-plan-kernels=small-m=true multicast=false" --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s "--fusion-to-gpu=format=isa small-m=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// PTXAS-DAG: ptxas ok: linear_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: lazy_prenorm_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: q_proj_q_norm_kernel0 registers=168 spills=0
// PTXAS-NOT: FAILED
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// CHECK-LABEL: func.func @linear
// CHECK: %[[SMS32:.*]] = call @fusionrtMultiprocessorCount() : () -> i32
// CHECK: %[[SMS:.*]] = arith.index_cast %[[SMS32]] : i32 to index
// CHECK: %[[TWICE:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK: %[[SMALL:.*]] = arith.cmpi ule, %[[TWICE]], %[[SMS]]
// CHECK: %[[GRID:.*]] = arith.select %[[SMALL]]
// CHECK: %[[SMEM:.*]] = arith.select %[[SMALL]], %c230912_i32{{(_[0-9]+)?}}, %c230912_i32{{(_[0-9]+)?}} : i32
// CHECK: %[[FLAG64:.*]] = arith.extui %[[SMALL]] : i1 to i64
// CHECK: %[[FLAG:.*]] = arith.index_cast %[[FLAG64]] : i64 to index
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@linear_kernel0 blocks in (%[[GRID]], %{{.*}}, %{{.*}}) threads in (%c384, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %[[SMEM]] args({{.*}}, %[[FLAG]] : index)
// CHECK-NEXT: gpu.wait
// CHECK: gpu.func @linear_kernel0({{.*}}, %[[ARG:.*]]: index) kernel
// CHECK: %[[PICK:.*]] = arith.cmpi ne, %[[ARG]], %c0
// CHECK-NEXT: scf.if %[[PICK]] {
// CHECK: %[[ACC0:.*]] = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<64x64xf32>>
// A consumer group whose first row is at or past M skips its MMAs: it waits
// for each slot and releases it, and keeps the zero accumulator.
// CHECK: %[[LIVE:.*]] = arith.cmpi ult, %{{.*}}, %arg2 : index
// CHECK-NEXT: scf.if %[[LIVE]] -> (!nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>, index) {
// CHECK: nvvm.wgmma.mma_async
// CHECK: } else {
// CHECK: scf.for {{.*}} -> (index) {
// CHECK-NOT: wgmma
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK-NOT: wgmma
// CHECK: nvgpu.mbarrier.arrive
// CHECK-NOT: wgmma
// CHECK: scf.yield %[[ACC0]], %{{.*}} : !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>, index
// CHECK: } else {
// CHECK: nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<64x256xf32>>
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @linear(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @q_proj_q_norm(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>) -> tensor<?x2048xbf16> {
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<128xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
func.func @lazy_prenorm(%x: tensor<?x4096xbf16>, %w: tensor<4096x1024xbf16>, %bias: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y = fusion.fused_matmul %x, %w col_bias(%bias : tensor<1024xbf16>) {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32} : tensor<?x4096xbf16>, tensor<4096x1024xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}
