// REQUIRES: ptxas
// Test the small-M kernel's decode splits (fusion-plan-kernels
// small-m-split; experimental): the small-M body of a plain GEMM and of a
// per-head norm takes three arguments after the body flag, the call's K
// range count S and a workspace of partial sums and counters. The host
// asks the runtime for the cooperative grid (the kernel is launched
// cooperatively: range 0 of a tile waits for the others), allocates the
// workspace, zeroes the counters, and frees both after the launch. Lazy
// Pre-Norm with its row sums in the kernel keeps plain small-M tiles.
// (multicast=false: the host IR without the main body's cluster of two.)
// RUN: fusion-opt %s "--fusion-plan-kernels=small-m-split=true multicast=false" --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s "--fusion-to-gpu=format=isa small-m-split=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: linear_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: q_proj_q_norm_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: lazy_prenorm_kernel0 registers=168 spills=0
// PTXAS-NOT: FAILED

// CHECK-LABEL: func.func @linear
// CHECK: %[[LIMIT:.*]] = call @fusionrtCooperativeGridLimit(%{{.*}}, %c384_i32, %{{.*}}, %c1_i32)
// CHECK: %[[PARTIALS:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xf32>
// CHECK: %[[COUNTERS:.*]], %[[T:.*]] = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xi32>
// CHECK: %[[ZEROED:.*]] = gpu.memset async [%[[T]]] %[[COUNTERS]], %c0_i32
// CHECK: %[[LAUNCH:.*]] = gpu.launch_func async [%[[ZEROED]]] @fusion_kernels::@linear_kernel0 {{.*}}, %{{.*}} : index, %{{.*}} : index, %[[PARTIALS]] : memref<?xf32>, %[[COUNTERS]] : memref<?xi32>)
// CHECK: gpu.dealloc async [%[[LAUNCH]]] %[[PARTIALS]]
// CHECK-LABEL: func.func @q_proj_q_norm
// CHECK: call @fusionrtCooperativeGridLimit
// CHECK: gpu.launch_func {{.*}} : memref<?xf32>, %{{.*}} : memref<?xi32>)
// CHECK-LABEL: func.func @lazy_prenorm
// CHECK-NOT: fusionrtCooperativeGridLimit
// CHECK: gpu.launch_func {{.*}}, %{{.*}} : index)
// The kernel: the flag, S, the workspace.
// CHECK: gpu.func @linear_kernel0({{.*}}, %{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xi32>) kernel
// Ranges past 0 hand over only their rows inside M (M - the tile's first
// row of them), and range 0 adds only those.
// CHECK: %[[LEFT:.*]] = arith.subi %arg2, %{{.*}} : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[LEFT]] : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: vector.store %{{.*}}, %[[SLOTS:arg[0-9]+]][%{{.*}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK: scf.if %{{.*}} -> (vector<2xf32>) {
// CHECK: vector.load %[[SLOTS]][%{{.*}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK: } else {
// CHECK-NOT: vector.load
// CHECK: scf.yield %{{.*}} : vector<2xf32>
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
