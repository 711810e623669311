// The row family's norm gradients: fusion.rms_norm_grad and
// fusion.layer_norm_grad left standing get the dx kernel on a persistent grid
// of at most 512 CTAs, which writes one partial row of each parameter
// gradient per row group into a pool buffer, then the kernel that sums the
// partial rows (CTA (x, y): 32 columns of parameter y), and the buffer is
// freed after it; without parameter gradients only the dx kernel runs.
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

// Every kernel assembles without spills.
// PTXAS-DAG: ptxas ok: rms_grad_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_grad_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_grad_plain_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_odd_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_odd_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// N = 1024: groups of 64 threads (2 vectors of 8 each), 2 rows per CTA;
// G = max(1, min(ceil(rows / 2), 512)) CTAs, 2 G partial rows of 1024.
// CHECK-LABEL: func.func @rms_grad(
// CHECK: %[[GROUPS:.*]] = arith.ceildivui %{{.*}}, %c2
// CHECK: %[[CAPPED:.*]] = arith.minui %[[GROUPS]], %c512
// CHECK: %[[G:.*]] = arith.maxui %[[CAPPED]], %c1
// CHECK: %[[UNITS:.*]] = arith.muli %[[G]], %c2
// CHECK: %[[COUNT:.*]] = arith.muli %[[G]], %c2048
// CHECK: %[[P:.*]], %[[T0:.*]] = gpu.alloc async [%{{.*}}] (%[[COUNT]]) : memref<?xf32>
// CHECK: %[[T1:.*]] = gpu.launch_func async [%[[T0]]] @fusion_kernels::@rms_grad_kernel0 blocks in (%[[G]], %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c48_i32 args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, %[[P]] : memref<?xf32>, {{.*}} : index)
// CHECK: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @fusion_kernels::@rms_grad_kernel0_params blocks in (%c32, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c1040_i32 args(%[[P]] : memref<?xf32>, {{.*}} : memref<?xf32>, %[[UNITS]] : index)
// CHECK: gpu.dealloc async [%[[T2]]] %[[P]] : memref<?xf32>
func.func @rms_grad(%dy: tensor<?x1024xbf16>, %x: tensor<?x1024xbf16>, %rstd: tensor<?xf32>, %w: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<1024xf32>) {
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<1024xbf16>)
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %dx, %dw : tensor<?x1024xbf16>, tensor<1024xf32>
}

// N = 4096, weight and bias gradients: one row of 256 threads per CTA (the
// group sums meet in shared memory), two parameters' partial rows, and the
// reduction's grid has one row of CTAs per parameter.
// CHECK-LABEL: func.func @ln_grad(
// CHECK: %[[G:.*]] = arith.maxui %{{.*}}, %c1
// CHECK: %[[COUNT:.*]] = arith.muli %[[G]], %c8192
// CHECK: %[[P:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%[[COUNT]]) : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_kernel0 blocks in (%[[G]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c80_i32
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_kernel0_params blocks in (%c128, %c2, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c1040_i32 args(%[[P]] : memref<?xf32>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xf32>, %[[G]] : index)
// CHECK: gpu.dealloc async
func.func @ln_grad(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>) {
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<4096xbf16>) {with_bias_grad}
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  return %dx, %dw, %db : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
}

// No weight: dx only, no partials, no second kernel.
// CHECK-LABEL: func.func @rms_grad_plain(
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async {{.*}}@rms_grad_plain_kernel0 {{.*}}, {{.*}} : index)
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @rms_grad_plain(%dy: tensor<?x768xbf16>, %x: tensor<?x768xbf16>, %rstd: tensor<?xf32>) -> tensor<?x768xbf16> {
  %dx = fusion.rms_norm_grad %dy, %x, %rstd : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xf32> -> tensor<?x768xbf16>
  return %dx : tensor<?x768xbf16>
}

// 1001 f32 (element accesses, ragged groups), rank 3 flattened to rows, only
// the bias gradient: one parameter.
// CHECK-LABEL: func.func @ln_grad_odd(
// CHECK: gpu.launch_func async {{.*}}@ln_grad_odd_kernel0 {{.*}} threads in (%c512, %c1, %c1)
// CHECK: gpu.launch_func async {{.*}}@ln_grad_odd_kernel0_params blocks in (%c32, %c1, %c1)
func.func @ln_grad_odd(%dy: tensor<2x?x1001xf32>, %x: tensor<2x?x1001xf32>, %mean: tensor<2x?xf32>, %rstd: tensor<2x?xf32>) -> (tensor<2x?x1001xf32>, tensor<1001xf32>) {
  %dx, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd {with_bias_grad}
      : tensor<2x?x1001xf32>, tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?x1001xf32>, tensor<1001xf32>
  return %dx, %db : tensor<2x?x1001xf32>, tensor<1001xf32>
}
}
