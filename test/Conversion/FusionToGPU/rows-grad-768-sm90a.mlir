// The norm-gradient dx kernel's shape at 768 bf16 columns (96 vectors of 8,
// BERT-base's width), the one width of the common ones whose rows the
// whole-warpgroup groups (32, 64, 128, 256 threads) cover only raggedly:
// one warp per row with 3 vectors per thread (RowSpec.cpp, shapeNormGrad),
// 8 rows per CTA of 256 threads, no exchange across warps (the warp's
// barrier after its xor shuffles, no named barrier), the grid from the
// register cap: RMSNorm 80 registers, 3 CTAs per SM (132 x 3 = 396),
// LayerNorm (two accumulators per column) 128, 2 per SM (264). 96-thread
// groups made 6-warp CTAs, which ran as if only 4 of the 5 that the grid
// counted per SM were resident (design.md).
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

// At the cap, without spills.
// PTXAS-DAG: ptxas ok: rms_grad_768_kernel0 registers={{([0-7][0-9]|80)}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_768_kernel0 registers={{([0-9][0-9]|1[01][0-9]|12[0-8])}} spills=0
// PTXAS-NOT: FAILED

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Dynamic shared memory: only the row the 8 groups' dweight columns are
// summed in (768 floats), 16 bytes of alignment.
// CHECK-LABEL: func.func @rms_grad_768(
// CHECK: arith.ceildivui %{{.*}}, %c8
// CHECK: %[[CAPPED:.*]] = arith.minui %{{.*}}, %c396
// CHECK: %[[G:.*]] = arith.maxui %[[CAPPED]], %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_grad_768_kernel0 blocks in (%[[G]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c3088_i32
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_grad_768_kernel0_params blocks in (%c96, %c1, %c1)
func.func @rms_grad_768(%dy: tensor<?x768xbf16>, %x: tensor<?x768xbf16>, %rstd: tensor<?xf32>, %w: tensor<768xbf16>) -> (tensor<?x768xbf16>, tensor<768xf32>) {
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<768xbf16>)
      : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xf32> -> tensor<?x768xbf16>, tensor<768xf32>
  return %dx, %dw : tensor<?x768xbf16>, tensor<768xf32>
}

// CHECK-LABEL: func.func @ln_grad_768(
// CHECK: arith.ceildivui %{{.*}}, %c8
// CHECK: %[[CAPPED:.*]] = arith.minui %{{.*}}, %c264
// CHECK: %[[G:.*]] = arith.maxui %[[CAPPED]], %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_768_kernel0 blocks in (%[[G]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c6160_i32
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_768_kernel0_params blocks in (%c96, %c2, %c1)
func.func @ln_grad_768(%dy: tensor<?x768xbf16>, %x: tensor<?x768xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<768xbf16>) -> (tensor<?x768xbf16>, tensor<768xf32>, tensor<768xf32>) {
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<768xbf16>) {with_bias_grad}
      : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x768xbf16>, tensor<768xf32>, tensor<768xf32>
  return %dx, %dw, %db : tensor<?x768xbf16>, tensor<768xf32>, tensor<768xf32>
}
}

// The RMSNorm dx kernel: 80 registers at most; per row three 16-byte
// vectors each of x and dy, 512 bytes apart (32 lanes x 16 bytes), the
// warp's xor shuffles and its barrier, no named barrier; after the loop the
// 8 groups add their columns in order (7 CTA barriers).
// CHECK-LABEL: gpu.func @rms_grad_768_kernel0(
// CHECK-SAME: nvvm.maxnreg = 80 : i32, nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: scf.for
// CHECK-COUNT-6: vector.load %{{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK-NOT: nvvm.barrier id
// CHECK: scf.yield
// CHECK-COUNT-7: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @ln_grad_768_kernel0(
// CHECK-SAME: nvvm.maxnreg = 128 : i32, nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: nvvm.bar.warp.sync
// CHECK-NOT: nvvm.barrier id
// CHECK: gpu.return
