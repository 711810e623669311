// REQUIRES: ptxas
// Test the structure of a norm epilogue over a row through global memory on
// the sm_100a (tcgen05) GEMM kernel (Gemm/GemmTcgen05Epilogue.cpp): a
// layer_norm with a residual, weight and bias over N = 12288, wider than a
// cluster of 16 CTAs of 512 columns, planned as 24 tiles of 512 columns
// (global_rows, one 512-column accumulator stage, the whole tensor memory).
// The epilogue warpgroup's pass 1 (the pieces, written back) and pass 2
// (the centered squares around the slice mean) run on the tensor memory;
// then each row's (slice mean, centered sum of squares) goes to its slot of
// the partials in global memory, under a device-scope fence, the
// warpgroup's named barrier and one atomic add on the row block's counter;
// thread 0 polls the counter, the barrier and a fence follow, and each
// thread merges its row's tiles (Chan); the tile of the first columns
// writes mean and rstd; the last pass normalizes and releases the stage
// after its last loads. No other role waits on another CTA. The kernel was
// never executed (no B200 here).
// RUN: fusion-opt %s --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=ONE
// ONE: {{^}}1{{$}}
// PTXAS: ptxas ok: ln_global_kernel0 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @ln_global(%a: tensor<1000x512xbf16>, %b: tensor<512x12288xbf16>, %r: tensor<1000x12288xbf16>, %w: tensor<12288xbf16>, %nb: tensor<12288xbf16>) -> (tensor<1000x12288xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b residual(%r : tensor<1000x12288xbf16>) norm_weight(%w : tensor<12288xbf16>) norm_bias(%nb : tensor<12288xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x12288xbf16> -> tensor<1000x12288xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %s : tensor<1000x12288xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
}

// The plan: tiles of 512 columns through global memory; two ring stages,
// two TMA-store buffers (the tile waits in tensor memory, not in shared
// memory): 2 * (128 + 512) * 64 * 2 + 32768 + 512 + 1024 = 198144.
// PLAN: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144, global_rows = true>

// CHECK-LABEL: gpu.func @ln_global_kernel0
// CHECK-SAME: %[[STATMEAN:[^:]*]]: memref<?xf32>, %[[STATRSTD:[^:]*]]: memref<?xf32>, %[[PARTIALS:[^:]*]]: memref<?xf32>, %[[COUNTERS:[^:]*]]: memref<?xi32>
// One accumulator stage of 512 columns.
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[TEMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: llvm.mlir.constant(512 : i32) : i32
// CHECK-NEXT: nvvm.tcgen05.alloc
// CHECK: nvvm.tcgen05.dealloc
// The epilogue: pass 1 writes the row back, pass 2 reads it.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvvm.tcgen05.st
// CHECK: nvvm.tcgen05.wait <store>
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// Publish: the row's pair into the partials, fence, barrier, one add.
// CHECK: vector.store %{{.*}}, %[[PARTIALS]][%{{.*}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK-NEXT: %[[BAR_ID:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[THREADS:.*]] = arith.constant 128 : i32
// CHECK-NEXT: nvvm.barrier id = %[[BAR_ID]] number_of_threads = %[[THREADS]]
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNTERS]][%{{.*}}] : (i32, memref<?xi32>) -> i32
// Wait: thread 0 polls, the barrier, the fence, then the merge over the
// row block's tiles.
// CHECK: scf.while : () -> () {
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNTERS]][%{{.*}}] : (i32, memref<?xi32>) -> i32
// CHECK: nvvm.barrier id
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK: scf.for
// CHECK: vector.load %[[PARTIALS]][%{{.*}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK: math.rsqrt
// The statistics by the tile of the first columns.
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0{{.*}} : index
// CHECK-NEXT: %[[WRITES:.*]] = arith.andi %{{.*}}, %[[FIRST]] : i1
// CHECK-NEXT: scf.if %[[WRITES]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[STATMEAN]]
// CHECK-NEXT: memref.store %{{.*}}, %[[STATRSTD]]
// The last pass: the stage released after the last chunk's loads.
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[TEMPTY]]
// CHECK: gpu.return

// The PTX has the pair stored, the fence, the barrier, the add; the poll
// (an atomic read, LLVM's or with 0), the barrier, the fence, the loads.
// PTX: .entry ln_global_kernel0
// PTX: st.global.v2.b32
// PTX: fence.acq_rel.gpu;
// PTX-NEXT: bar.sync {{.*}}1, 128;
// PTX: atom.global.add.u32 {{.*}}, 1;
// PTX: atom.global.or.b32 {{.*}}, 0;
// PTX: bar.sync {{.*}}1, 128;
// PTX-NEXT: fence.acq_rel.gpu;
// PTX: ld.global.v2.b32
