// The row family's norm gradients: fusion.rms_norm_grad and
// fusion.layer_norm_grad left standing get the dx kernel on a persistent grid
// sized from its register cap (132 SMs x the CTAs per SM that the cap
// allows), whose CTAs sum their row groups' parameter-gradient columns in
// shared memory and write one partial row each into a pool buffer, then the
// kernel that sums the partial rows (CTA (x, y): 8 columns of parameter y),
// and the buffer is freed after it; without parameter gradients only the dx
// kernel runs.
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// The bf16 widenings take one instruction an element: a byte permute for
// the sums (the low half's bytes to {0, 0, b0, b1}, the high half's to
// {0, 0, b2, b3}), a shift and a mask for dx; no cvt.f32.bf16 (a permute and
// a shift for a pair's high half).
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir | FileCheck %s --check-prefix=WIDEN
// WIDEN-LABEL: .entry rms_grad_kernel0(
// WIDEN-NOT: cvt.f32.bf16
// WIDEN-DAG: prmt.b32 {{.*}}, 0, 0x1044U;
// WIDEN-DAG: prmt.b32 {{.*}}, 0, 0x3244U;
// WIDEN-DAG: shl.b32 {{.*}}, 16;
// WIDEN-DAG: and.b32 {{.*}}, -65536;
// WIDEN-NOT: cvt.f32.bf16
// WIDEN-LABEL: .entry rms_grad_kernel0_params(
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

// N = 1024: groups of 64 threads (2 vectors of 8 each), 4 rows per CTA of
// 256 threads, 64 registers (4 CTAs per SM); G = max(1, min(ceil(rows / 4),
// 132 x 4)) CTAs, G partial rows of 1024. Dynamic shared memory: the group
// sums' slots (2 steps x 8 warps x 4 floats) and the row the groups are
// summed in (4096 bytes), 16 bytes of alignment.
// CHECK-LABEL: func.func @rms_grad(
// CHECK: %[[GROUPS:.*]] = arith.ceildivui %{{.*}}, %c4
// CHECK: %[[CAPPED:.*]] = arith.minui %[[GROUPS]], %c528
// CHECK: %[[G:.*]] = arith.maxui %[[CAPPED]], %c1
// CHECK: %[[COUNT:.*]] = arith.muli %[[G]], %c1024
// CHECK: %[[P:.*]], %[[T0:.*]] = gpu.alloc async [%{{.*}}] (%[[COUNT]]) : memref<?xf32>
// CHECK: %[[T1:.*]] = gpu.launch_func async [%[[T0]]] @fusion_kernels::@rms_grad_kernel0 blocks in (%[[G]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c4368_i32 args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, %[[P]] : memref<?xf32>, {{.*}} : index)
// CHECK: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @fusion_kernels::@rms_grad_kernel0_params blocks in (%c128, %c1, %c1) threads in (%c512, %c1, %c1) dynamic_shared_memory_size %c2064_i32 args(%[[P]] : memref<?xf32>, {{.*}} : memref<?xf32>, %[[G]] : index)
// CHECK: gpu.dealloc async [%[[T2]]] %[[P]] : memref<?xf32>
func.func @rms_grad(%dy: tensor<?x1024xbf16>, %x: tensor<?x1024xbf16>, %rstd: tensor<?xf32>, %w: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<1024xf32>) {
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<1024xbf16>)
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %dx, %dw : tensor<?x1024xbf16>, tensor<1024xf32>
}

// N = 4096, weight and bias gradients (two accumulators per column: one
// vector per thread, two rows per step): one group of 512 threads per CTA
// (16 warps, the group sums meet in shared memory), 2 CTAs per SM, two
// parameters' partial rows, and the reduction's grid has one row of CTAs
// per parameter.
// CHECK-LABEL: func.func @ln_grad(
// CHECK: %[[CAPPED:.*]] = arith.minui %{{.*}}, %c264
// CHECK: %[[G:.*]] = arith.maxui %[[CAPPED]], %c1
// CHECK: %[[COUNT:.*]] = arith.muli %[[G]], %c8192
// CHECK: %[[P:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%[[COUNT]]) : memref<?xf32>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_kernel0 blocks in (%[[G]], %c1, %c1) threads in (%c512, %c1, %c1) dynamic_shared_memory_size %c528_i32
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_kernel0_params blocks in (%c512, %c2, %c1) threads in (%c512, %c1, %c1) dynamic_shared_memory_size %c2064_i32 args(%[[P]] : memref<?xf32>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xf32>, %[[G]] : index)
// CHECK: gpu.dealloc async
func.func @ln_grad(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>) {
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<4096xbf16>) {with_bias_grad}
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  return %dx, %dw, %db : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
}

// No weight: dx only, no partials, no second kernel. N = 768: one warp per
// row, 3 vectors per thread (none idle), 8 rows per CTA of 256 threads, 64
// registers: 4 CTAs per SM (rows-grad-768-sm90a.mlir has the weighted ones).
// CHECK-LABEL: func.func @rms_grad_plain(
// CHECK-NOT: gpu.alloc
// CHECK: arith.minui %{{.*}}, %c528
// CHECK: gpu.launch_func async {{.*}}@rms_grad_plain_kernel0 {{.*}} threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 {{.*}}, {{.*}} : index)
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @rms_grad_plain(%dy: tensor<?x768xbf16>, %x: tensor<?x768xbf16>, %rstd: tensor<?xf32>) -> tensor<?x768xbf16> {
  %dx = fusion.rms_norm_grad %dy, %x, %rstd : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xf32> -> tensor<?x768xbf16>
  return %dx : tensor<?x768xbf16>
}

// 1001 f32 (element accesses, a ragged row: one vector per thread, 1024
// threads), rank 3 flattened to rows, only the bias gradient: one
// parameter.
// CHECK-LABEL: func.func @ln_grad_odd(
// CHECK: gpu.launch_func async {{.*}}@ln_grad_odd_kernel0 {{.*}} threads in (%c1024, %c1, %c1)
// CHECK: gpu.launch_func async {{.*}}@ln_grad_odd_kernel0_params blocks in (%c126, %c1, %c1)
func.func @ln_grad_odd(%dy: tensor<2x?x1001xf32>, %x: tensor<2x?x1001xf32>, %mean: tensor<2x?xf32>, %rstd: tensor<2x?xf32>) -> (tensor<2x?x1001xf32>, tensor<1001xf32>) {
  %dx, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd {with_bias_grad}
      : tensor<2x?x1001xf32>, tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?x1001xf32>, tensor<1001xf32>
  return %dx, %db : tensor<2x?x1001xf32>, tensor<1001xf32>
}
}

// The dx kernel of @rms_grad (after the host functions): 64 registers at
// most, each group's rows in a loop; per row x and dy read as 16-byte
// vectors of bf16, the weight again from L1, the group sums' xor shuffles,
// the group's own named barrier (1 + its group, 64 threads) for the sums of
// its two warps, dy and x widened again from their packed pairs (shift and
// mask of the 32-bit words) for dx and the dweight accumulators; after the
// loop, the four groups add their columns in order (three CTA barriers)
// and the last writes the CTA's partial row.
// CHECK-LABEL: gpu.func @rms_grad_kernel0(
// CHECK-SAME: nvvm.maxnreg = 64 : i32, nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: gpu.shuffle xor
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c64_i32
// CHECK: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK: arith.shli
// CHECK: arith.andi
// CHECK: vector.store %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: math.fma
// CHECK: scf.yield
// CHECK-COUNT-3: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<?xf32>, vector<8xf32>
// CHECK: gpu.return

// The dx kernel of @ln_grad: two rows per step, the second's row index
// clamped to the last row and its dy zeroed when it is past the group's
// rows (it stores nothing); the four sums of the step (g (x - mean) and g
// of each row) exchanged at one named barrier of the group's 512 threads.
// CHECK-LABEL: gpu.func @ln_grad_kernel0(
// CHECK-SAME: nvvm.maxnreg = 64 : i32, nvvm.maxntid = array<i32: 512, 1, 1>
// CHECK: scf.for
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK: arith.minui
// CHECK: vector.load %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: %[[DY:.*]] = vector.load %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: arith.select %[[VALID]], %[[DY]], %{{.*}} : vector<8xbf16>
// CHECK-COUNT-4: memref.store %{{.*}} : memref<2x16x4xf32, #gpu.address_space<workgroup>>
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c512_i32
// CHECK: scf.if %[[VALID]] {
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: vector.store %{{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: scf.yield
