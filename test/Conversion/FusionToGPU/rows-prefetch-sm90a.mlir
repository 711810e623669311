// fusion-plan-kernels rows-prefetch (fusion-compile --rows-prefetch;
// experimental, off by default): every standalone norm gets
// fusion.rows_prefetch, and the row kernel of a row that is one warp's
// (16-bit, whole vectors, up to 1024 wide) runs on a persistent grid of at
// most 25 one-warp CTAs per SM (.maxnreg 80; 132 SMs: 3300), each loading
// its next row before it normalizes the current one. Wider rows and f32
// rows keep one CTA per row.
// RUN: fusion-opt %s --fusion-plan-kernels=rows-prefetch=true | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-plan-kernels=rows-prefetch=true --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s "--fusion-to-gpu=format=isa rows-prefetch=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// REQUIRES: ptxas
// PLAN: fusion.rms_norm {{.*}}fusion.rows_prefetch
// PLAN: fusion.layer_norm {{.*}}fusion.rows_prefetch
// PLAN: fusion.rms_norm {{.*}}fusion.rows_prefetch
// PTXAS-DAG: ptxas ok: rms_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln4096_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_f32_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED
// PTX: .entry rms_kernel0
// PTX: .maxnreg 80

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// CHECK-LABEL: func.func @rms(
// CHECK: %[[ROWS:.*]] = memref.dim %{{.*}}, %c0
// CHECK: %[[CAPPED:.*]] = arith.minui %[[ROWS]], %c3300
// CHECK: %[[GRID:.*]] = arith.maxui %[[CAPPED]], %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_kernel0 blocks in (%[[GRID]], %c1, %c1) threads in (%c32, %c1, %c1)
func.func @rms(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y, %r = fusion.rms_norm %x weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}

// Four warps a row: the request is ignored.
// CHECK-LABEL: func.func @ln4096(
// CHECK-NOT: arith.minui
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln4096_kernel0 blocks in (%{{.*}}, %c1, %c1) threads in (%c128, %c1, %c1)
func.func @ln4096(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %b: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  %y, %m, %r = fusion.layer_norm %x weight(%g : tensor<4096xbf16>) bias(%b : tensor<4096xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x4096xbf16>
}

// f32 rows of 1024: two warps a row, ignored too.
// CHECK-LABEL: func.func @rms_f32(
// CHECK-NOT: arith.minui
// CHECK: gpu.launch_func
func.func @rms_f32(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<?x1024xf32> -> tensor<?x1024xf32>, tensor<?xf32>
  return %y : tensor<?x1024xf32>
}

// The kernel: rows blockIdx.x, + gridDim.x, ... below the row count, the
// next row's four 16-byte vectors loaded (clamped to the last row) before
// the current row's sums.
// CHECK-LABEL: gpu.func @rms_kernel0(
// CHECK: %[[FIRST:.*]] = gpu.block_id x
// CHECK: %[[STEP:.*]] = gpu.grid_dim x
// CHECK: scf.for %[[ROW:.*]] = %[[FIRST]] to %{{.*}} step %[[STEP]] iter_args(
// CHECK: arith.addi %[[ROW]], %[[STEP]]
// CHECK: arith.minui
// CHECK-COUNT-4: vector.load {{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: gpu.shuffle xor
}
