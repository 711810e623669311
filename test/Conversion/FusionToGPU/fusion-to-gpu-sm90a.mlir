// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels -convert-fusion-to-gpu | FileCheck %s

// Test that a plain GEMM with a long K loop (K = 1024) becomes a destination-passing host function (the
// result is an extra memref argument) that encodes both TMA descriptors and
// launches one kernel with 256 threads (2 consumer warpgroups) and the
// planned dynamic shared memory (198144 bytes: 4 stages of 48 KiB, the row
// sums and 1024 bytes of alignment slack).
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:.*]]: memref<1000x1024xbf16>, %[[B:.*]]: memref<1024x256xbf16>, %[[C:.*]]: memref<1000x256xbf16>)
// CHECK-DAG: %[[TA:.*]] = nvgpu.tma.create.descriptor %{{.*}} box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b
// CHECK-DAG: %[[TB:.*]] = nvgpu.tma.create.descriptor %{{.*}} box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
// CHECK: gpu.launch_func @fusion_kernels::@gemm_kernel0
// CHECK-SAME: threads in (%c256
// CHECK-SAME: dynamic_shared_memory_size %c198144_i32
// CHECK-NOT: fusion.
// The module's target moved onto the kernels' gpu.module.
// CHECK: gpu.module @fusion_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK: gpu.func @gemm_kernel0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<?x?xbf16>) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// The shared-memory base is padded to 1024 bytes for the 128-byte swizzle.
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.extract_aligned_pointer_as_index
// One mbarrier per stage (4), initialised by thread 0.
// CHECK: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK-COUNT-4: nvgpu.mbarrier.init
// Prologue: stages - 2 K tiles in flight, each an A tile and four 64-column B halves.
// CHECK-COUNT-2: nvgpu.mbarrier.arrive.expect_tx
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.arrive.expect_tx
// CHECK-COUNT-5: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.warpgroup.generate.descriptor
// CHECK: nvgpu.warpgroup.mma {{.*}} {transposeB}
// One wgmma group stays in flight; the CTA barrier releases the stage.
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: gpu.barrier
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvgpu.warpgroup.mma.store
// CHECK: vector.maskedstore
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @gemm(%a: tensor<1000x1024xbf16>, %b: tensor<1024x256xbf16>) -> tensor<1000x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<1000x1024xbf16>, tensor<1024x256xbf16> -> tensor<1000x256xbf16>
  return %c : tensor<1000x256xbf16>
}
}

// -----

// Test that the Lazy Pre-Norm prologue reads the squares of A's rows from
// the same shared-memory stage the MMA reads, before the barrier that
// releases it, and scales the rows by rstd in the epilogue.
// CHECK-LABEL: gpu.func @lazy_kernel0
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK-COUNT-4: vector.load {{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvgpu.warpgroup.mma
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK: gpu.shuffle xor
// CHECK: math.rsqrt
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @lazy(%a: tensor<512x1024xbf16>, %b: tensor<1024x256xbf16>) -> tensor<512x256xbf16> {
  %c = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32}
      : tensor<512x1024xbf16>, tensor<1024x256xbf16> -> tensor<512x256xbf16>
  return %c : tensor<512x256xbf16>
}
}

// -----

// Test that a single-CTA LayerNorm epilogue with residual, weight, bias and
// saved statistics takes them as kernel arguments, reduces each row with five
// xor shuffles per reduction (sum, then centered sum of squares), and writes
// mean and rstd.
// CHECK-LABEL: func.func @ln
// CHECK-SAME: %[[MEAN:[a-z0-9]+]]: memref<512xf32>, %[[RSTD:[a-z0-9]+]]: memref<512xf32>)
// CHECK: gpu.launch_func @fusion_kernels::@ln_kernel0
// CHECK-SAME: memref<?x?xbf16>, %{{.*}} : memref<?x?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xf32>)
// CHECK-LABEL: gpu.func @ln_kernel0
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK: math.rsqrt
// CHECK-COUNT-2: memref.store {{.*}} : memref<?xf32>
// CHECK: vector.maskedstore
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln(%a: tensor<512x256xbf16>, %b: tensor<256x256xbf16>, %r: tensor<512x256xbf16>, %w: tensor<256xbf16>, %bias: tensor<256xbf16>)
    -> (tensor<512x256xbf16>, tensor<512xf32>, tensor<512xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b residual(%r : tensor<512x256xbf16>) norm_weight(%w : tensor<256xbf16>) norm_bias(%bias : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<512x256xbf16>, tensor<256x256xbf16> -> tensor<512x256xbf16>, tensor<512xf32>, tensor<512xf32>
  return %y, %m, %s : tensor<512x256xbf16>, tensor<512xf32>, tensor<512xf32>
}
}

// -----

// Test that an intermediate result between two fused GEMMs lives in a
// gpu.alloc'ed buffer, freed at the end, and that each op gets its kernel.
// (the async forms, waited for at once: the host lowering has no other).
// CHECK-LABEL: func.func @two
// CHECK: %[[W:.*]] = gpu.wait async
// CHECK: %[[T:.*]], %[[A:.*]] = gpu.alloc async [%[[W]]] () : memref<256x256xbf16>
// CHECK: gpu.wait [%[[A]]]
// CHECK: gpu.launch_func @fusion_kernels::@two_kernel0
// CHECK: gpu.launch_func @fusion_kernels::@two_kernel1
// CHECK: gpu.dealloc async [%{{.*}}] %[[T]]
// CHECK-DAG: gpu.func @two_kernel0
// CHECK-DAG: gpu.func @two_kernel1
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @two(%x: tensor<256x128xbf16>, %w1: tensor<128x256xbf16>, %w2: tensor<256x128xbf16>) -> tensor<256x128xbf16> {
  %h = fusion.fused_matmul %x, %w1 {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32}
      : tensor<256x128xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>
  %y = fusion.fused_matmul %h, %w2 {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x256xbf16>, tensor<256x128xbf16> -> tensor<256x128xbf16>
  return %y : tensor<256x128xbf16>
}
}
