// REQUIRES: ptxas
// Test the structure of Lazy Pre-Norm on the sm_100a (tcgen05) GEMM kernel
// (Gemm/GemmTcgen05Kernel.cpp, lazyRowSumWarps), on rms_norm(A) @ B with
// row_scale and col_bias, N = 256 (two 256-column accumulator stages): warps
// 2-3 (threads 64-127) read every A tile the MMA reads, after full[s], and
// release the slot themselves, so empty[s] counts the MMA's commit and their
// 64 arrivals; after a tile's K loop they write the rows' sums of squares
// into shared memory (once the epilogue released the previous tile: a wait
// on tmemEmpty) and arrive on tmemFull, which counts the commit and them;
// they issue no tcgen05 operation. The epilogue reads the sums after
// tmemFull and scales each row by rsqrt(sum / K + eps) x row_scale before
// col_bias. The tensor-memory slot is the first word of the row sums: a CTA
// barrier after every thread's read of the base comes before any sum is
// written. Allocation, relinquish and deallocation once each; no wgmma.
// The kernel was never executed (no B200 here).
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// RUN: grep -c 'tcgen05.alloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.relinquish_alloc_permit' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.dealloc' %t.ptx | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'tcgen05.commit' %t.ptx | FileCheck %s --check-prefix=TWO
// ONE: {{^}}1{{$}}
// TWO: {{^}}2{{$}}
// PTXAS: ptxas ok: lazy_kernel0 registers={{[0-9]+}} spills=0

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @lazy(%a: tensor<1000x512xbf16>, %b: tensor<512x256xbf16>, %s: tensor<1000xf32>, %cb: tensor<256xbf16>) -> tensor<1000x256xbf16> {
  %c = fusion.fused_matmul %a, %b row_scale(%s : tensor<1000xf32>) col_bias(%cb : tensor<256xbf16>) {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32, epilogue = #fusion.epilogue<row_scale>} : tensor<1000x512xbf16>, tensor<512x256xbf16> -> tensor<1000x256xbf16>
  return %c : tensor<1000x256xbf16>
}
}

// CHECK: gpu.module @fusion_kernels [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx86">]
// CHECK-LABEL: gpu.func @lazy_kernel0
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// The ring's empty[s]: the MMA's commit and the 64 row-sum threads; tmemFull
// the same; tmemEmpty the 128 epilogue threads.
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK-NEXT: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c65
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-NEXT: %[[TEMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.mbarrier.init %[[TFULL]][%{{.*}}], %c65
// CHECK: nvgpu.mbarrier.init %[[TEMPTY]][%{{.*}}], %c128
// The allocation, the fenced barrier, the base, and the barrier after it.
// CHECK: nvvm.tcgen05.alloc
// CHECK-NEXT: nvvm.tcgen05.relinquish_alloc_permit
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<6>
// CHECK-NEXT: gpu.barrier
// The MMA warp commits each K step to empty[s] and each tile to tmemFull.
// CHECK-COUNT-4: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.commit
// CHECK: nvvm.tcgen05.commit
// CHECK: nvvm.tcgen05.dealloc
// The row-sum warps (threadId / 64 == 1): per K step wait full[s], 16
// swizzled 16-byte reads of A (4 row groups x 4 chunks) and their squares,
// then their arrival on empty[s]; no tcgen05 operation.
// CHECK: %[[WARPS23:.*]] = arith.divui %thread_id_x, %c64{{.*}} : index
// CHECK: %[[IS_LAZY:.*]] = arith.cmpi eq, %[[WARPS23]], %c1{{.*}} : index
// CHECK-NEXT: scf.if %[[IS_LAZY]] {
// CHECK-NOT: nvvm.tcgen05
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK-NOT: nvvm.tcgen05
// CHECK-COUNT-16: vector.load %{{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK-NOT: nvvm.tcgen05
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// After the tile: the halves of each row added (4 shuffles), the previous
// tile released by the epilogue, the sums stored, tmemFull arrived on.
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK-NOT: nvvm.tcgen05
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TEMPTY]]
// CHECK-NOT: nvvm.tcgen05
// CHECK-COUNT-4: memref.store %{{.*}} : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: nvvm.tcgen05
// CHECK: nvgpu.mbarrier.arrive %[[TFULL]]
// CHECK-NOT: nvvm.tcgen05
// CHECK: scf.yield
// The epilogue: after tmemFull (fenced), row i's sum, rsqrt(sum / K + eps),
// times row_scale.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TFULL]]
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: %[[SUM:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[MS:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK: %[[SHIFTED:.*]] = arith.addf %[[MS]], %{{.*}} : f32
// CHECK-NEXT: %[[RSTD:.*]] = math.rsqrt %[[SHIFTED]] : f32
// CHECK-NEXT: %[[SCALE:.*]] = memref.load %{{.*}} : memref<?xf32>
// CHECK-NEXT: arith.mulf %[[RSTD]], %[[SCALE]] : f32
// CHECK: nvvm.tcgen05.ld
// CHECK: gpu.return

// In the PTX, the row-sum warps' reads are 16-byte shared loads; the set-up has
// the fenced barrier and then the one after the base's read.
// PTX: .entry lazy_kernel0
// PTX: tcgen05.fence::before_thread_sync;
// PTX-NEXT: bar.sync 0;
// PTX-NEXT: tcgen05.fence::after_thread_sync;
// PTX: bar.sync 0;
// PTX: ld.shared.v4.b32
// PTX: shfl.sync.bfly.b32
