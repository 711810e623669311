// RUN: fusion-opt %s -split-input-file "-fusion-plan-kernels=small-m=false" -convert-fusion-to-gpu | FileCheck %s
// (small-m=false: the small-M body of dynamic token counts is tested in
// Dialect/Fusion/Transforms/plan-kernels-small-m.mlir and
// Conversion/FusionToGPU/small-m-sm90a.mlir.)

// Test that a plain GEMM with a long K loop (K = 1024) becomes a destination-passing host function (the
// result is an extra memref argument) that encodes the TMA descriptors of A,
// B and the bf16 output, and launches one persistent kernel: min(tiles, SMs)
// CTAs (the SM count from the runtime) of 384 threads (a producer and 2
// consumer warpgroups) with the planned dynamic shared memory (230912 bytes:
// 4 stages of 48 KiB, two 16 KiB output staging buffers, the row sums and
// 1024 bytes of alignment slack).
// The runtime's SM count, declared once per module.
// CHECK: func.func private @fusionrtMultiprocessorCount() -> i32
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:.*]]: memref<1000x1024xbf16>, %[[B:.*]]: memref<1024x256xbf16>, %[[C:.*]]: memref<1000x256xbf16>)
// CHECK-DAG: %[[TA:.*]] = nvgpu.tma.create.descriptor %{{.*}} box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b
// CHECK-DAG: %[[TB:.*]] = nvgpu.tma.create.descriptor %{{.*}} box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
// CHECK: %[[SMS:.*]] = call @fusionrtMultiprocessorCount() : () -> i32
// CHECK: %[[FEW:.*]] = arith.minui %{{.*}}, %{{.*}} : index
// CHECK: %[[GRID:.*]] = arith.maxui %[[FEW]], %{{.*}} : index
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@gemm_kernel0 blocks in (%[[GRID]], %c1{{[_0-9]*}}, %c1{{[_0-9]*}})
// CHECK-SAME: threads in (%c384
// CHECK-SAME: dynamic_shared_memory_size %c230912_i32
// CHECK-NOT: fusion.
// The module's target moved onto the kernels' gpu.module.
// CHECK: gpu.module @fusion_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx81">]
// CHECK: gpu.func @gemm_kernel0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<?x?xbf16>, %{{.*}}: !llvm.ptr) kernel
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>, nvvm.maxnreg = 168 : i32, nvvm.maxntid = array<i32: 384, 1, 1>
// The shared-memory base is padded to 1024 bytes for the 128-byte swizzle.
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.extract_aligned_pointer_as_index
// full[s] (one TMA arrival) and empty[s] (256 consumer threads), 4 stages.
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: nvgpu.mbarrier.init %[[FULL]][%{{.*}}], %c1{{(_[0-9]+)?}}, predicate
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c256{{(_[0-9]+)?}}, predicate
// CHECK-COUNT-6: nvgpu.mbarrier.init
// CHECK-NOT: nvgpu.mbarrier.init
// CHECK: gpu.barrier
// Producer warpgroup: gives up registers; thread 0 loops over this CTA's
// tiles (blockIdx.x, step gridDim.x) and K steps, waiting for empty[s]
// before each TMA of an A tile and four 64-column B halves into full[s].
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: scf.for %{{.*}} = %block_id_x{{[_0-9]*}} to %{{.*}} step %grid_dim_x{{[_0-9]*}}
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULL]]
// CHECK-COUNT-5: nvgpu.tma.async.load
// Consumers: take the registers; wait full[s], wgmma with one group in
// flight, then release the previous slot on empty.
// CHECK: nvvm.setmaxregister increase 232
// CHECK: scf.for %{{.*}} = %block_id_x{{[_0-9]*}} to %{{.*}} step %grid_dim_x{{[_0-9]*}}
// CHECK: nvgpu.warpgroup.mma.init.accumulator
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: nvgpu.warpgroup.generate.descriptor
// CHECK: nvgpu.warpgroup.mma {{.*}} {transposeB}
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// Epilogue from the accumulator registers (128 f32 per thread) to the
// staging buffers and TMA stores, 64 columns at a time; the first buffer
// waits for the store two chunks back.
// CHECK-COUNT-128: llvm.extractvalue
// CHECK: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK-COUNT-16: vector.store {{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier
// CHECK: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.commit.group
// No row reduction without a norm epilogue.
// CHECK-NOT: gpu.shuffle
// The last stores finish before the CTA exits.
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK-NOT: {read}
// CHECK: gpu.return
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @gemm(%a: tensor<1000x1024xbf16>, %b: tensor<1024x256xbf16>) -> tensor<1000x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<1000x1024xbf16>, tensor<1024x256xbf16> -> tensor<1000x256xbf16>
  return %c : tensor<1000x256xbf16>
}
}

// -----

// Test that the Lazy Pre-Norm prologue has the consumers add the squares of
// their A rows from the slot the MMA reads, between issuing the wgmma and
// releasing the slot (4 loads of 16 bytes: half a 64-column row, bf16 to f32
// by integer shifts, FMA into 4 accumulators), then hand the row sums to the
// fragment layout through shared memory between two warpgroup barriers and
// scale the rows by rstd in the epilogue.
// CHECK-LABEL: gpu.func @lazy_kernel0
// CHECK: nvvm.setmaxregister increase
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.warpgroup.mma
// CHECK-COUNT-4: vector.load {{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: math.fma
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvgpu.mbarrier.arrive
// CHECK: scf.yield
// CHECK: gpu.shuffle xor
// CHECK: memref.store {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: nvvm.barrier
// CHECK-COUNT-2: memref.load {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: nvvm.barrier
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
// saved statistics takes them as kernel arguments, reduces each row over the
// 4 lanes of a quad with two xor shuffles per reduction (sum, then centered
// sum of squares) for each of a thread's 2 rows, and writes mean and rstd.
// The producer prefetches each tile's residual rows into L2 (one bulk
// prefetch per row, in a loop) before it loads the tile's A and B.
// CHECK-LABEL: func.func @ln
// CHECK-SAME: %[[MEAN:[a-z0-9]+]]: memref<512xf32>, %[[RSTD:[a-z0-9]+]]: memref<512xf32>)
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_kernel0
// CHECK-SAME: memref<?x?xbf16>, %{{.*}} : memref<?x?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xf32>, %{{.*}} : !llvm.ptr)
// CHECK-LABEL: gpu.func @ln_kernel0
// CHECK: scf.for
// CHECK: nvvm.cp.async.bulk.prefetch %{{.*}}, %{{.*}} : <1>
// CHECK: nvgpu.tma.async.load
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK: math.rsqrt
// CHECK-COUNT-2: memref.store {{.*}} : memref<?xf32>
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK: math.rsqrt
// CHECK-COUNT-2: memref.store {{.*}} : memref<?xf32>
// CHECK: nvgpu.tma.async.store
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
// gpu.alloc'ed buffer, freed at the end, that each op gets its kernel, and
// that the function's device work is one chain of async ops on one stream
// (created by the first gpu.wait, waited for once at the end).
// CHECK-LABEL: func.func @two
// CHECK: %[[W:.*]] = gpu.wait async
// CHECK: %[[T:.*]], %[[A:.*]] = gpu.alloc async [%[[W]]] () : memref<256x256xbf16>
// CHECK-NOT: gpu.wait
// CHECK: %[[L0:.*]] = gpu.launch_func async [%[[A]]] @fusion_kernels::@two_kernel0
// CHECK-NOT: gpu.wait
// CHECK: %[[L1:.*]] = gpu.launch_func async [%[[L0]]] @fusion_kernels::@two_kernel1
// CHECK: %[[D:.*]] = gpu.dealloc async [%[[L1]]] %[[T]]
// CHECK: gpu.wait [%[[D]]]
// CHECK-NEXT: return
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

// -----

// Test that a LayerNorm epilogue over N = 1024 (a cluster of 4 CTAs of 256
// columns) launches a persistent grid of min(row blocks, co-resident
// clusters) clusters of 4 CTAs, the co-resident count from the runtime for
// this kernel, its cluster size, block and shared memory (not the SM count);
// syncs the cluster after initializing the barriers (4 slot barriers: 2
// exchange rounds x 2 tile parities; tileFull for the 256 consumer threads,
// tileEmpty for the 96 epilogue threads). The consumers (216 registers)
// compute each row's slice mean and centered sum of squares from the f32
// accumulator, wait until the staging buffers are free (tileEmpty), send
// both partials to every peer with mapa + st.async (complete_tx on the
// peer's barrier), write the tile into the staging buffers and arrive on
// tileFull. The epilogue warps (warps 1-3 of the producer warpgroup, 72
// registers) wait for the tile and both rounds of partials, merge them
// (Chan's formula), normalize in place, TMA-store the tile, wait until the
// store read it, and release the staging buffers (tileEmpty).
// CHECK: func.func private @fusionrtMaxActiveClusters(!llvm.ptr, i32, i32, i32) -> i32
// CHECK: llvm.mlir.global internal constant @__fusion_name_ln_cluster_kernel0("ln_cluster_kernel0\00")
// CHECK-LABEL: func.func @ln_cluster
// CHECK-NOT: call @fusionrtMultiprocessorCount
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %c128{{.*}} : index
// CHECK-DAG: %[[NAME:.*]] = llvm.mlir.addressof @__fusion_name_ln_cluster_kernel0 : !llvm.ptr
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG: %[[THREADS:.*]] = arith.constant 384 : i32
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 222720 : i32
// CHECK: %[[RESIDENT:.*]] = call @fusionrtMaxActiveClusters(%[[NAME]], %[[C4]], %[[THREADS]], %[[SMEM]])
// CHECK: %[[RES:.*]] = arith.index_cast %[[RESIDENT]] : i32 to index
// CHECK-NOT: call @fusionrtMultiprocessorCount
// CHECK: %[[FIT:.*]] = arith.minui %[[BLOCKS]], %[[RES]] : index
// CHECK: %[[CLUSTERS:.*]] = arith.maxui %[[FIT]], %{{.*}} : index
// CHECK: %[[GRID:.*]] = arith.muli %[[CLUSTERS]], %c4{{.*}} : index
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_cluster_kernel0 clusters in (%c4{{[_0-9]*}}, %c1{{[_0-9]*}}, %c1{{[_0-9]*}}) blocks in (%[[GRID]], %{{.*}}) threads in (%{{.*}}) dynamic_shared_memory_size %[[SMEM]]
// CHECK-LABEL: gpu.func @ln_cluster_kernel0
// CHECK: nvgpu.mbarrier.create
// CHECK: nvgpu.mbarrier.create
// CHECK: %[[SLOTBARS:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.init %[[FULL]][%{{.*}}], %c256
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c96
// CHECK: gpu.barrier
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK: nvvm.cluster.wait {aligned}
// CHECK: nvvm.setmaxregister decrease 72
// CHECK: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[SLOTBARS]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[SLOTBARS]]
// CHECK: scf.for
// CHECK: memref.load {{.*}} : memref<4x128xf32, #gpu.address_space<workgroup>>
// CHECK: math.rsqrt
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK-COUNT-4: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: nvvm.setmaxregister increase 216
// CHECK: nvgpu.warpgroup.mma
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[SLOTBARS]]
// CHECK: nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: nvvm.inline_ptx "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [$0], $1, [$2];"
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[SLOTBARS]]
// CHECK: nvvm.inline_ptx "st.async
// CHECK-NOT: nvgpu.mbarrier.try_wait.parity %[[SLOTBARS]]
// CHECK: vector.store {{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NOT: nvgpu.mbarrier.try_wait.parity %[[SLOTBARS]]
// CHECK: nvgpu.mbarrier.arrive %[[FULL]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln_cluster(%a: tensor<512x256xbf16>, %b: tensor<256x1024xbf16>) -> tensor<512x1024xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<512x256xbf16>, tensor<256x1024xbf16> -> tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
}
}

// -----

// Test that a transposed B (transpose_rhs: B is [N, K], nn.Linear's weight
// layout) takes N from B's first dimension, loads B in [64 x 64] boxes at
// (k, column) coordinates (K innermost), and issues each K step as one
// commit group of four K-major m64n256k16 wgmma whose descriptors advance by
// 32 bytes (2 units) per k16 step, for A and B alike.
// CHECK-LABEL: func.func @nt
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0{{.*}} : memref<512x256xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@nt_kernel0
// CHECK-SAME: %[[N]] : index
// CHECK-LABEL: gpu.func @nt_kernel0
// CHECK: nvgpu.tma.async.load %{{.*}}[%[[K0:.*]], %{{.*}}], %{{.*}} to %{{.*}} : <tensor = memref<128x64xbf16, 3>
// CHECK-COUNT-4: nvgpu.tma.async.load %{{.*}}[%[[K0]], %{{.*}}], %{{.*}} to %{{.*}} : <tensor = memref<64x64xbf16, 3>
// CHECK: nvgpu.warpgroup.generate.descriptor %{{.*}}, %{{.*}} : memref<256x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async %[[DA:.*]], %[[DB:.*]], %{{.*}}, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: %[[S1:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK: %[[A1:.*]] = llvm.add %[[DA]], %[[S1]] : i64
// CHECK: %[[B1:.*]] = llvm.add %[[DB]], %[[S1]] : i64
// CHECK: nvvm.wgmma.mma_async %[[A1]], %[[B1]], %{{.*}}, <m = 64, n = 256, k = 16>
// CHECK: llvm.mlir.constant(4 : i64) : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.mlir.constant(6 : i64) : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvgpu.warpgroup.mma
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @nt(%x: tensor<1000x256xbf16>, %w: tensor<512x256xbf16>) -> tensor<1000x512xbf16> {
  %y = fusion.fused_matmul %x, %w {transpose_rhs} : tensor<1000x256xbf16>, tensor<512x256xbf16> -> tensor<1000x512xbf16>
  return %y : tensor<1000x512xbf16>
}
}

// -----

// Test that an RMSNorm epilogue over N = 2048 with a bf16 output (8 CTAs of
// 256 columns: more than a cluster takes on sm_90a) exchanges its statistics
// through global memory: the host allocates the partials (M x tiles_n x 2
// f32) and one counter per row block, zeroes the counters, passes both to
// the kernel and frees them. In the kernel the epilogue warps (emitted
// first, in the producer warpgroup) wait for the staged tile, spin on its
// row block's counter, acquire the partials (a GPU-scope fence), normalize
// the tile in its staging buffers and TMA-store all four 64-column chunks,
// waiting until they have been read, then free the buffers (tileEmpty); the
// consumers publish each tile (a GPU-scope fence, then the counter's atomic
// add) before they wait for the staging buffers (tileEmpty) and hand the
// tile over. CTAs wait for one another, so the grid is at most what the
// device holds at once, and the runtime launches the kernel cooperatively
// (fusionrtCooperativeGridLimit marks it), not the SM count; the device must
// hold a row's tiles_n = ceil(N / 256) CTAs at once.
// CHECK: func.func private @fusionrtCooperativeGridLimit(!llvm.ptr, i32, i32, i32) -> i32
// CHECK-LABEL: func.func @rms_split
// CHECK-NOT: call @fusionrtMultiprocessorCount
// CHECK: %[[PARTIALS:.*]], %[[T0:.*]] = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xf32>
// CHECK: %[[COUNTERS:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] (%{{.*}}) : memref<?xi32>
// CHECK: %[[ZEROED:.*]] = gpu.memset async [%[[T1]]] %[[COUNTERS]], %c0_i32 : memref<?xi32>, i32
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @__fusion_name_rms_split_kernel0 : !llvm.ptr
// CHECK: %[[TILES_N:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: call @fusionrtCooperativeGridLimit(%[[NAME]], %c384_i32, %c215552_i32, %[[TILES_N]])
// CHECK-NOT: call @fusionrtMultiprocessorCount
// CHECK: %[[RAN:.*]] = gpu.launch_func async [%[[ZEROED]]] @fusion_kernels::@rms_split_kernel0 blocks in
// CHECK-SAME: %[[PARTIALS]] : memref<?xf32>, %[[COUNTERS]] : memref<?xi32>
// CHECK: %[[F0:.*]] = gpu.dealloc async [%[[RAN]]] %[[PARTIALS]]
// CHECK: %[[F1:.*]] = gpu.dealloc async [%[[F0]]] %[[COUNTERS]]
// CHECK: gpu.wait [%[[F1]]]
// CHECK-LABEL: gpu.func @rms_split_kernel0
// CHECK: nvvm.setmaxregister  decrease 72
// CHECK: nvgpu.mbarrier.arrive.expect_tx
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TILEFULL:[0-9]+]][
// CHECK: scf.while
// CHECK: memref.atomic_rmw addi %c0_i32{{.*}}, %arg{{[0-9]+}}[%{{.*}}] : (i32, memref<?xi32>) -> i32
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-COUNT-4: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvgpu.mbarrier.arrive %[[TILEEMPTY:[0-9]+]][
// CHECK: nvvm.setmaxregister  increase 216
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK: memref.atomic_rmw addi %c1_i32{{.*}}, %arg{{[0-9]+}}[%{{.*}}] : (i32, memref<?xi32>) -> i32
// CHECK: nvgpu.mbarrier.try_wait.parity %[[TILEEMPTY]][
// CHECK: nvgpu.mbarrier.arrive %[[TILEFULL]][
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_split(%a: tensor<1000x256xbf16>, %b: tensor<256x2048xbf16>) -> tensor<1000x2048xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x256xbf16>, tensor<256x2048xbf16> -> tensor<1000x2048xbf16>
  return %y : tensor<1000x2048xbf16>
}
}

// -----

// Test that a residual of the output's type in an epilogue-warps kernel
// (here LayerNorm over a cluster of 4) goes through the staging buffers: the
// host encodes a fourth tensor map (the residual's, [128 x 64] boxes) and
// passes it last; the producer does not prefetch residual rows into L2
// (measured slower on the H200);
// the first epilogue thread TMA-loads the CTA's first residual tile (4 boxes,
// 65536 bytes on its own mbarrier) before the tile loop and each next one
// right after the store has read the buffers; the consumers wait for
// tileEmpty (every epilogue thread's arrival) and that mbarrier, then read
// the residual from the staging buffers.
// CHECK-LABEL: func.func @ln_cluster_residual
// CHECK-COUNT-4: nvgpu.tma.create.descriptor
// CHECK-NOT: nvgpu.tma.create.descriptor
// CHECK: gpu.launch_func
// CHECK-LABEL: gpu.func @ln_cluster_residual_kernel0
// CHECK-NOT: nvvm.cp.async.bulk.prefetch
// CHECK: nvvm.setmaxregister  decrease 72
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[RESIDUAL:[0-9]+]][%{{.*}}], %c65536
// CHECK-COUNT-4: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %{{.*}}], %[[RESIDUAL]][
// CHECK: scf.for
// CHECK: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[RESIDUAL]][%{{.*}}], %c65536
// CHECK-COUNT-4: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %{{.*}}], %[[RESIDUAL]][
// CHECK: nvvm.setmaxregister  increase 216
// CHECK: nvgpu.mbarrier.try_wait.parity %[[RESIDUAL]][
// CHECK: vector.load %{{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln_cluster_residual(%a: tensor<512x256xbf16>, %b: tensor<256x1024xbf16>, %r: tensor<512x1024xbf16>) -> tensor<512x1024xbf16> {
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<512x1024xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<512x256xbf16>, tensor<256x1024xbf16> -> tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
}
}

// -----

// A weight gradient, transpose_lhs (dW = dy^T x, lhs [K, M] with the token
// count K dynamic): A arrives as two M-major boxes of [64 K rows, 64 M
// columns] per stage, one per consumer group, and the four wgmma of a K
// step take A column-major ("col") and the row-major B N-major ("row"),
// each descriptor stepping 16 K rows (128 units of 16 bytes) per k16.
// CHECK-LABEL: func.func @wgrad
// CHECK: %[[K:.*]] = memref.dim %arg0, %c0{{.*}} : memref<?x256xbf16>
// CHECK: nvgpu.tma.create.descriptor %{{.*}} box[%c64{{.*}}, %c64{{.*}}] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>
// CHECK-LABEL: gpu.func @wgrad_kernel0
// CHECK-COUNT-6: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %[[K0:.*]]], %{{.*}} to %{{.*}} : <tensor = memref<64x64xbf16, 3>
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: %[[S:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK: llvm.add %{{.*}}, %[[S]] : i64
// CHECK: llvm.add %{{.*}}, %[[S]] : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: nvgpu.warpgroup.mma
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wgrad(%dy: tensor<?x256xbf16>, %x: tensor<?x512xbf16>) -> tensor<256x512xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<?x256xbf16>, tensor<?x512xbf16> -> tensor<256x512xbf16>
  return %dw : tensor<256x512xbf16>
}
}
