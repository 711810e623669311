// The row kernel family: standalone norms and broadcasting element-wise ops
// get kernels of their own, launched on the function's stream; reshapes are
// views of the same buffer.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// A row of 1024 bf16 is one warp: 4 vectors of 8 per thread, one row per
// CTA of 32 threads (three vectors or more per thread), shuffles only.
// CHECK-LABEL: func.func @rms(
// CHECK-SAME: %[[X:.*]]: memref<?x1024xbf16>, %[[G:.*]]: memref<1024xbf16>, %[[Y:.*]]: memref<?x1024xbf16>, %[[R:.*]]: memref<?xf32>)
// CHECK: %[[ROWS:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[GRID1:.*]] = arith.maxui %[[ROWS]], %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_kernel0 blocks in (%[[GRID1]], %c1, %c1) threads in (%c32, %c1, %c1) dynamic_shared_memory_size %{{.*}} args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xf32>, {{.*}} : index)
func.func @rms(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<?xf32>) {
  %y, %r = fusion.rms_norm %x weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  return %y, %r : tensor<?x1024xbf16>, tensor<?xf32>
}

// A row of 4096 is 128 threads (4 warps): the warps' sums meet in shared
// memory, one slot per warp and reduction.
// CHECK-LABEL: func.func @ln(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_kernel0 blocks in (%{{.*}}, %c1, %c1) threads in (%c128, %c1, %c1)
func.func @ln(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %b: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %m, %r = fusion.layer_norm %x weight(%g : tensor<4096xbf16>) bias(%b : tensor<4096xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y, %m, %r : tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>
}

// Inference: statistics nothing reads get no buffer and are not written;
// the kernel takes x, y, the parameters and the row count only.
// CHECK-LABEL: func.func @ln_inference(
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_inference_kernel0 {{.*}} args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : index)
// CHECK-NOT: gpu.dealloc
// CHECK: return
// CHECK-LABEL: func.func @rms_inference(
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_inference_kernel0 {{.*}} args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : index)
// CHECK: return
// The kernels: no 4-byte store of a statistic (y is stored as v4.b32).
// The weight and bias, which every row reads, are loaded with Inductor's
// hints: kept in L1 and, under an evict_last policy, in L2 (4 vectors of
// each per thread; x's loads have none).
// LayerNorm's mean and centered sum of squares merge in one pass of xor
// shuffles, a pair at each distance (a ragged row, ln_odd, takes two passes).
// PTX-LABEL: .entry ln_inference_kernel0(
// PTX: createpolicy.fractional.L2::evict_last.b64 [[POLICY:%rd[0-9]+]], 1.0;
// PTX-COUNT-8: ld.global.L1::evict_last.L2::cache_hint.v4.b32 {{[^;]*}}, [[POLICY]];
// PTX-NOT: ld.global.L1::evict_last
// PTX: shfl.sync.bfly.b32 {{[^;]*}}, 16, 31
// PTX-NOT: shfl.sync.bfly.b32 {{[^;]*}}, 8, 31
// PTX: shfl.sync.bfly.b32 {{[^;]*}}, 16, 31
// PTX-NOT: st.global.b32
// PTX: ret;
// PTX-LABEL: .entry rms_inference_kernel0(
// PTX: createpolicy.fractional.L2::evict_last.b64 [[POLICY:%rd[0-9]+]], 1.0;
// PTX-COUNT-4: ld.global.L1::evict_last.L2::cache_hint.v4.b32 {{[^;]*}}, [[POLICY]];
// PTX-NOT: st.global.b32
// PTX: ret;
func.func @ln_inference(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y, %m, %r = fusion.layer_norm %x weight(%g : tensor<1024xbf16>) bias(%b : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}
func.func @rms_inference(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y, %r = fusion.rms_norm %x weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}

// 1001 is no multiple of 8: element accesses, a ragged last vector per row
// masked, rank 3 flattened to rows.
// CHECK-LABEL: func.func @ln_odd(
// CHECK: gpu.launch_func async {{.*}}@ln_odd_kernel0 {{.*}} threads in (%c256, %c1, %c1)
func.func @ln_odd(%x: tensor<2x?x1001xf32>) -> (tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32>) {
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<2x?x1001xf32> -> tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32>
  return %y, %m, %r : tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}

// A bias row vector (f32 beside bf16 data), then a per-row scale; the
// intermediate lives in a pool buffer.
// CHECK-LABEL: func.func @bias_scale(
// CHECK: %[[T:.*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.launch_func async {{.*}}@bias_scale_kernel0 {{.*}} threads in (%c256, %c1, %c1)
// CHECK: gpu.launch_func async {{.*}}@bias_scale_kernel1 {{.*}} threads in (%c256, %c1, %c1)
// CHECK: gpu.dealloc async [%{{.*}}] %[[T]]
func.func @bias_scale(%x: tensor<?x768xbf16>, %b: tensor<768xf32>, %c: tensor<?x1xf32>) -> tensor<?x768xbf16> {
  %y = fusion.add %x, %b : tensor<?x768xbf16>, tensor<768xf32>
  %z = fusion.mul %y, %c : tensor<?x768xbf16>, tensor<?x1xf32>
  return %z : tensor<?x768xbf16>
}

// A reshape is a view: no copy unless it is returned.
// CHECK-LABEL: func.func @scale_rows_of_w(
// CHECK: %[[COL:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [512, 1] : memref<512xbf16> into memref<512x1xbf16>
// CHECK: gpu.launch_func async {{.*}}@scale_rows_of_w_kernel0
// CHECK-NOT: gpu.memcpy
// CHECK: return
func.func @scale_rows_of_w(%w: tensor<512x256xbf16>, %g: tensor<512xbf16>) -> tensor<512x256xbf16> {
  %col = tensor.expand_shape %g [[0, 1]] output_shape [512, 1] : tensor<512xbf16> into tensor<512x1xbf16>
  %s = fusion.mul %w, %col : tensor<512x256xbf16>, tensor<512x1xbf16>
  return %s : tensor<512x256xbf16>
}

// A returned reshape is copied into the caller's buffer.
// CHECK-LABEL: func.func @returned_view(
// CHECK: gpu.memcpy async [%{{.*}}] %arg3, %{{.*}} : memref<512x1xbf16>, memref<512x1xbf16>
// CHECK: gpu.launch_func async
func.func @returned_view(%w: tensor<512x256xbf16>, %g: tensor<512xbf16>) -> (tensor<512x256xbf16>, tensor<512x1xbf16>) {
  %col = tensor.expand_shape %g [[0, 1]] output_shape [512, 1] : tensor<512xbf16> into tensor<512x1xbf16>
  %s = fusion.mul %w, %col : tensor<512x256xbf16>, tensor<512x1xbf16>
  return %s, %col : tensor<512x256xbf16>, tensor<512x1xbf16>
}

// A returned reshape of a kernel's result is no copy: the kernel writes the
// caller's buffer through the inverse view (a collapse_shape undoes an
// expand_shape, dynamic rows included; an expand_shape to a static shape
// undoes a collapse_shape).
// CHECK-LABEL: func.func @returned_view_of_result(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x256xbf16>, %[[Y:[^:]*]]: memref<?x256xbf16>, %[[C:[^:]*]]: memref<512x256xbf16>, %[[OUT0:[^:]*]]: memref<?x2x128xbf16>, %[[OUT1:[^:]*]]: memref<131072xbf16>)
// CHECK-DAG: %[[V0:.*]] = memref.collapse_shape %[[OUT0]] {{\[\[}}0], [1, 2]] : memref<?x2x128xbf16> into memref<?x256xbf16>
// CHECK-DAG: %[[V1:.*]] = memref.expand_shape %[[OUT1]] {{\[\[}}0, 1]] output_shape [512, 256] : memref<131072xbf16> into memref<512x256xbf16>
// CHECK: memref.reinterpret_cast %[[V0]]
// CHECK: gpu.launch_func async {{.*}}@returned_view_of_result_kernel0
// CHECK: memref.reinterpret_cast %[[V1]]
// CHECK: gpu.launch_func async {{.*}}@returned_view_of_result_kernel1
// CHECK-NOT: gpu.memcpy
// CHECK: return
func.func @returned_view_of_result(%x: tensor<?x256xbf16>, %y: tensor<?x256xbf16>, %c: tensor<512x256xbf16>)
    -> (tensor<?x2x128xbf16>, tensor<131072xbf16>) {
  %c1 = arith.constant 0 : index
  %m = tensor.dim %x, %c1 : tensor<?x256xbf16>
  %s = fusion.add %x, %y : tensor<?x256xbf16>
  %v = tensor.expand_shape %s [[0], [1, 2]] output_shape [%m, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %t = fusion.mul %c, %c : tensor<512x256xbf16>
  %f = tensor.collapse_shape %t [[0, 1]] : tensor<512x256xbf16> into tensor<131072xbf16>
  return %v, %f : tensor<?x2x128xbf16>, tensor<131072xbf16>
}

// Kernels: xor shuffles; shared memory and a barrier only where a row spans
// warps; 16-byte vector accesses.
// The row's loads read row min(row, rows - 1) without a branch (a group past
// the last row skips only its stores), inside the one guard for no rows.
// CHECK-LABEL: gpu.func @rms_kernel0(
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK: %[[LAST:.*]] = arith.minui
// CHECK-NEXT: %[[BASE:.*]] = arith.muli %[[LAST]], %c1024
// CHECK: %[[AT:.*]] = arith.addi %[[BASE]]
// CHECK-NEXT: vector.load %{{.*}}[%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: gpu.barrier
// CHECK: math.rsqrt
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @ln_kernel0(
// CHECK: gpu.dynamic_shared_memory
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: gpu.return
}

// PTXAS-COUNT-9: ptxas ok: {{.*}}_kernel{{[0-9]}} registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED
// PTX-DAG: ld.global.v4.b32
// PTX-DAG: st.global.v4.b32
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: bar.sync
