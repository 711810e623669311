// REQUIRES: ptxas
// Test the swapped decode body (fusion-plan-kernels decode-swap,
// fusion.kernel_decode) on sm_90a: a GEMM of a dynamic token count with an
// element-wise epilogue and nn.Linear's [N, K] weight gets a third body,
// which the host picks (flag 2) for calls of at most 32 tokens and hands a
// tokens descriptor of [32, 64] boxes; the body computes y^T = W x^T with
// wgmma m64n32k16 (the weight's 64-row slice as A, the tokens as N) over a
// ring of 4 KB of tokens and 8 KB of weight a stage, one consumer group
// computing and the other only releasing the slots, and stores y from
// registers with the row scale, column bias and residual. A per-head RMSNorm
// over heads of 128 (Qwen3's q_norm) takes tiles of one head: both groups
// compute 64 features each and meet at a barrier to sum each token's squares.
// Every body assembles without spills but the residual GEMM's main one.
// RUN: fusion-opt %s "--fusion-plan-kernels=small-m=true decode-swap=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s "--fusion-plan-kernels=small-m=true decode-swap=true" --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s "--fusion-to-gpu=format=isa small-m=true decode-swap=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: not fusion-opt %s "--fusion-plan-kernels=small-m=false decode-swap=true" 2>&1 | FileCheck %s --check-prefix=NOSMALL
// RUN: not fusion-opt %s "--fusion-plan-kernels=small-m=false small-m-split=true" 2>&1 | FileCheck %s --check-prefix=NOSMALLSPLIT
// NOSMALL: error: fusion-plan-kernels: expected small-m with decode-swap (the small-M body's decode splits, the decode body beside it), but got small-m=false
// NOSMALLSPLIT: error: fusion-plan-kernels: expected small-m with small-m-split
// PLAN: remark: decode GEMM body on sm_90a (operands swapped) for calls of at most 32 tokens: #fusion.kernel_config<tile_m = 32, tile_n = 64, tile_k = 64, stages = 18, cluster_n = 1, consumers = 2, smem_bytes = 223232>
// PLAN: remark: decode GEMM body on sm_90a
// PLAN: remark: decode GEMM body on sm_90a (operands swapped) for calls of at most 32 tokens: #fusion.kernel_config<tile_m = 32, tile_n = 128, tile_k = 64, stages = 11, cluster_n = 1, consumers = 2, smem_bytes = {{[0-9]+}}>
// PLAN: remark: no decode GEMM body: the decode body's per-head norm adds no post_residual
// PTXAS-DAG: ptxas ok: projection_kernel0 registers=168 spills=0
// (The main body of a GEMM with a residual spills with or without the decode
// body: 364 bytes at 4096 x 1024 without it.)
// PTXAS-DAG: ptxas ok: o_proj_residual_kernel0 registers=168 spills=
// PTXAS-DAG: ptxas ok: q_proj_q_norm_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: q_norm_post_residual_kernel0 registers=168 spills=0
// PTXAS-NOT: FAILED

// The host: the decode body for M <= 32 (flag 2, its grid and shared
// memory), its tokens descriptor the last argument.
// CHECK-LABEL: func.func @projection
// CHECK: %[[DECODE:.*]] = arith.cmpi ule, %[[M:.*]], %c32 : index
// CHECK: arith.select %[[DECODE]], %{{.*}}, %{{.*}} : index
// CHECK: arith.select %[[DECODE]], %c223232_i32, %{{.*}} : i32
// CHECK: %[[FLAG:.*]] = arith.select %[[DECODE]], %c2{{.*}}, %{{.*}} : index
// CHECK: %[[TOKENS:.*]] = nvgpu.tma.create.descriptor %{{.*}} box[%c32{{.*}}, %c64{{.*}}] : memref<*xbf16> -> <tensor = memref<32x64xbf16, 3>
// CHECK: %[[TOKENSPTR:.*]] = builtin.unrealized_conversion_cast %[[TOKENS]]
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@projection_kernel0 {{.*}} args({{.*}}, %[[FLAG]] : index, %[[TOKENSPTR]] : !llvm.ptr)
// The kernel: three bodies on the flag.
// CHECK: gpu.func @projection_kernel0({{.*}}, %[[ARG:.*]]: index, %{{.*}}: !llvm.ptr) kernel
// CHECK: scf.index_switch %[[ARG]]
// CHECK-NEXT: case 1 {
// CHECK: nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<64x64xf32>>
// CHECK: case 2 {
// CHECK: nvgpu.mbarrier.init %{{.*}}[%c17{{.*}}]
// CHECK: nvgpu.tma.async.load {{.*}} -> memref<32x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load {{.*}} -> memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<64x32xf32>>
// CHECK: scf.if %{{.*}} -> (!nvgpu.warpgroup.accumulator<fragmented = vector<64x32xf32>>, index) {
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: } else {
// CHECK-NOT: wgmma
// CHECK: nvgpu.mbarrier.arrive
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xbf16>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xbf16>
// CHECK-NOT: nvgpu.tma.async.store
// CHECK: default {
// CHECK: nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<64x256xf32>>
// The residual: y[t, o] read at the element's token and feature.
// CHECK: gpu.func @o_proj_residual_kernel0(
// CHECK: case 2 {
// CHECK: %[[D:.*]] = vector.extract %{{.*}}[0] : f32 from vector<2xf32>
// CHECK-NEXT: %[[R:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xbf16>
// CHECK-NEXT: %[[RF:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK-NEXT: arith.addf %[[D]], %[[RF]] : f32
// The per-head norm: both groups' MMAs, each token's sum of squares over the
// warp's 16 features (three shuffles), the 8 warps' sums through shared
// memory between two barriers of both groups, rsqrt, the weight.
// CHECK: gpu.func @q_proj_q_norm_kernel0(
// CHECK: case 2 {
// CHECK-NOT: scf.if %{{.*}} -> (!nvgpu.warpgroup.accumulator
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
// CHECK: gpu.shuffle xor
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// CHECK: %[[RSTD:.*]] = math.rsqrt
// CHECK-NEXT: %[[NORMED:.*]] = arith.mulf %{{.*}}, %[[RSTD]] : f32
// CHECK-NEXT: arith.mulf %[[NORMED]], %{{.*}} : f32
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xbf16>

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @projection(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>, %rstd: tensor<?xf32>, %bias: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.fused_matmul %x, %w row_scale(%rstd : tensor<?xf32>) col_bias(%bias : tensor<4096xbf16>) {epilogue = #fusion.epilogue<row_scale>, transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @o_proj_residual(%x: tensor<?x4096xbf16>, %w: tensor<1024x4096xbf16>, %res: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = fusion.fused_matmul %x, %w residual(%res : tensor<?x1024xbf16>) {transpose_rhs} : tensor<?x4096xbf16>, tensor<1024x4096xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
func.func @q_proj_q_norm(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>) -> tensor<?x2048xbf16> {
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<128xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
// A per-head norm whose output the residual stream adds (post_residual):
// no decode body (its norm adds none); the small-M body does.
func.func @q_norm_post_residual(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>, %r: tensor<?x2048xbf16>) -> tensor<?x2048xbf16> {
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<128xbf16>) post_residual(%r : tensor<?x2048xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, norm_group_size = 128 : i64, transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
}
