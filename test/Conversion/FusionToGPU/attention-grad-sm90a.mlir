// The attention backward (fusion.gdpa_grad) on sm_90a: one persistent
// kernel over (batch, head) units (a TMA producer warp and a wgmma consumer
// warpgroup per 64 keys: S^T, dP^T, dV += P^T dO, dK += dS^T Q, dQ = dS K
// through every group's dS^T in shared memory), launched on the function's
// stream with 4-D tensor maps: those of do, q and dq only with query
// tokens, the others only with units.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Kunlun's backward: D = Dv = L_kv = 128, two consumer warpgroups (384
// threads), two stages of (Q, dO): 209 KB.
// CHECK-LABEL: func.func @kunlun(
// CHECK-SAME: %[[DO:[^:]*]]: memref<?x?x2x128xbf16>, %[[Q:[^:]*]]: memref<?x?x2x128xbf16>, %[[K:[^:]*]]: memref<?x128x2x128xbf16>, %[[V:[^:]*]]: memref<?x128x2x128xbf16>, %[[DQ:[^:]*]]: memref<?x?x2x128xbf16>, %[[DK:[^:]*]]: memref<?x128x2x128xbf16>, %[[DV:[^:]*]]: memref<?x128x2x128xbf16>)
// CHECK-DAG: %[[B:.*]] = memref.dim %[[Q]], %c0
// CHECK-DAG: %[[L:.*]] = memref.dim %[[Q]], %c1
// CHECK: %[[UNITS:.*]] = arith.muli %[[B]], %c2
// CHECK: %[[ANYUNIT:.*]] = arith.cmpi ne, %[[UNITS]], %c0
// CHECK: %[[ANYTOKEN:.*]] = arith.cmpi ne, %[[L]], %c0
// CHECK: %[[ANYTILE:.*]] = arith.andi %[[ANYUNIT]], %[[ANYTOKEN]]
// CHECK: %[[TILEMAPS:.*]]:3 = scf.if %[[ANYTILE]] -> (!llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-COUNT-3: nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c64, %c1, %c64] : memref<*xbf16> -> <tensor = memref<1x64x1x64xbf16, 3>, swizzle = swizzle_128b
// CHECK: } else {
// CHECK: %[[UNITMAPS:.*]]:4 = scf.if %[[ANYUNIT]] -> (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-COUNT-4: nvgpu.tma.create.descriptor
// CHECK: } else {
// CHECK: call @fusionrtMultiprocessorCount
// CHECK: %[[GRID:.*]] = arith.maxui %{{.*}}, %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_kernel0 blocks in (%[[GRID]], %c1, %c1) threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c214016_i32 args(%[[TILEMAPS]]#0 : !llvm.ptr, %[[TILEMAPS]]#1 : !llvm.ptr, %[[UNITMAPS]]#0 : !llvm.ptr, %[[UNITMAPS]]#1 : !llvm.ptr, %[[TILEMAPS]]#2 : !llvm.ptr, %[[UNITMAPS]]#2 : !llvm.ptr, %[[UNITMAPS]]#3 : !llvm.ptr, %[[B]] : index, %[[L]] : index, %c2 : index)
func.func @kunlun(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

// L_kv = 100 padded to 128, D = 64, Dv = 128: three stages.
// CHECK-LABEL: func.func @silu_d64(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@silu_d64_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c205824_i32
func.func @silu_d64(%do: tensor<?x?x4x128xbf16>, %q: tensor<?x?x4x64xbf16>, %k: tensor<?x100x4x64xbf16>, %v: tensor<?x100x4x128xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x100x4x64xbf16>, tensor<?x100x4x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x4x128xbf16>, tensor<?x?x4x64xbf16>, tensor<?x100x4x64xbf16>, tensor<?x100x4x128xbf16> -> tensor<?x?x4x64xbf16>, tensor<?x100x4x64xbf16>, tensor<?x100x4x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x4x64xbf16>, tensor<?x100x4x64xbf16>, tensor<?x100x4x128xbf16>
}

// L_kv = 64: one consumer warpgroup (256 threads) computes all of dQ's
// column blocks; f16.
// CHECK-LABEL: func.func @one_group(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@one_group_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{ *}}dynamic_shared_memory_size %c173056_i32
func.func @one_group(%do: tensor<?x?x1x128xf16>, %q: tensor<?x?x1x128xf16>, %k: tensor<?x64x1x128xf16>, %v: tensor<?x64x1x128xf16>) -> (tensor<?x?x1x128xf16>, tensor<?x64x1x128xf16>, tensor<?x64x1x128xf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<relu>, scale = 0.0625 : f32}
      : tensor<?x?x1x128xf16>, tensor<?x?x1x128xf16>, tensor<?x64x1x128xf16>, tensor<?x64x1x128xf16> -> tensor<?x?x1x128xf16>, tensor<?x64x1x128xf16>, tensor<?x64x1x128xf16>
  return %dq, %dk, %dv : tensor<?x?x1x128xf16>, tensor<?x64x1x128xf16>, tensor<?x64x1x128xf16>
}

// Jagged q (offsets, i32): q, do and dq [T, H, D] go to the maps as one
// batch [1, T, H, D]; B = len(offsets) - 1; the kernel also takes the
// offsets and dq viewed flat (a sequence's last tile's rows, the rows
// outside every sequence).
// CHECK-LABEL: func.func @jagged(
// CHECK-SAME: %[[JQ:[^:]*]]: memref<?x2x128xbf16>, %{{[^:]*}}: memref<?x128x2x128xbf16>, %{{[^:]*}}: memref<?x128x2x128xbf16>, %[[OFF:[^:]*]]: memref<?xi32>, %[[JDQ:[^:]*]]: memref<?x2x128xbf16>
// CHECK: %[[N:.*]] = memref.dim %[[OFF]], %c0
// CHECK: %[[N1:.*]] = arith.maxui %[[N]], %c1
// CHECK: %[[JB:.*]] = arith.subi %[[N1]], %c1
// CHECK: %[[T:.*]] = memref.dim %[[JQ]], %c0
// CHECK: memref.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] output_shape [1, %{{.*}}, 2, 128] : memref<?x2x128xbf16> into memref<1x?x2x128xbf16>
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[JDQ]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x2x128xbf16> to memref<?xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{.*}} %[[JB]] : index, %[[T]] : index, %c2 : index, %[[OFF]] : memref<?xi32>, %[[FLAT]] : memref<?xbf16>)
func.func @jagged(%do: tensor<?x2x128xbf16>, %q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>) -> (tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

}

// The kernels follow the host functions: launch bounds of 384 threads and
// 168 registers, setmaxnreg (the producer down to 24, the consumers up to
// 240).
// CHECK-LABEL: gpu.func @kunlun_kernel0(
// CHECK-SAME: nvvm.maxnreg = 168 : i32, nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvvm.setmaxregister increase 240
// dV += P^T dO and dK += dS^T Q with P^T's and dS^T's pairs as A (wgmma's
// register form, accumulating), four K steps each, issued before the
// barrier over both consumer groups that waits for every group's dS^T;
// then dQ = dS K with dS^T M-major from shared memory.
// CHECK-COUNT-8: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.mma_async {{.*}} D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]

// ptxas accepts every kernel: D = Dv = 128 keeps dK and dV (128 registers)
// beside S^T and dP^T (64) in the consumers' 240, and K's and V's MMA
// descriptors are rebuilt per tile from an opaque zero (hoisted out of the
// tile loop by LLVM, they spilled 160 bytes); see the ptxas sweep. P^T's and
// dS^T's pairs held as dV's and dK's A (wgmma's register form) cost the
// Kunlun kernel 4 bytes (0 before) for 5% less time on the H200.
// PTXAS-DAG: ptxas ok: kunlun_kernel0 registers=168 spills={{[0-4]}}{{$}}
// PTXAS-DAG: ptxas ok: silu_d64_kernel0 registers=168 spills=0
// PTXAS-DAG: ptxas ok: one_group_kernel0 registers=248 spills=0
// The jagged kernel spills (48 bytes): the unit's token range and the tile's
// tokens left beside dK and dV (the partial tile's dq stores rebuild their
// addresses from an opaque zero: 64 bytes more without). With FMAs
// (fusion-contract-float-ops) and gelu_tanh's derivative as FMAs around the
// tanh, 48 bytes where it was 32, for 3% fewer instructions.
// PTXAS-DAG: ptxas ok: jagged_kernel0 registers=168 spills={{[0-9]|[1-3][0-9]|4[0-8]}}{{$}}

// The five MMAs: S^T and dP^T with Q and dO as K-major (transposed) B,
// dV and dK with dO and Q as N-major B [64 tokens, Dv / D], dQ with dS^T
// as M-major (transposed) A (imm-trans-a and -b set); tanh.approx for gelu_tanh; the producer's TMA
// loads, the consumers' TMA stores and their named barriers (3 over all
// consumers, before dQ reads every group's dS^T); the opaque zero K's and
// V's descriptors are rebuilt from each tile (an inline-asm mov).
// PTX-DAG: begin inline asm\0A\09mov.u32 %r{{[0-9]+}}, 0;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX-DAG: p, 1,  1, 1,  1;
// PTX-DAG: tanh.approx.f32
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX-DAG: bar.sync \093, 256;
// PTX-DAG: fence.proxy.async.shared::cta
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 \0924;
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 \09240;
