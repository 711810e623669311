// REQUIRES: ptxas
// The sm_90a GEMM kernel's rope epilogue (fusion-fuse's fusion-rope-epilogue),
// from programs written with the unfused ops:
// - Llama's q_proj after its RMSNorm, then the rotary embedding (heads of
//   128, rotate-half): one GEMM (Lazy Pre-Norm's row scale, then the rope);
// - GPT-NeoX's partial rotary (the first 32 of 128 columns), GPT-J's
//   interleaved pairs over the first 64 of 256, f32 tables;
// - Phi-3's heads of 96: tiles of 192 columns (two heads in 64-column
//   boxes).
// Each tile holds whole heads; the rotated pairs are in the same thread.
// Every kernel assembles without spilling.
// RUN: fusion-opt %s --fusion-fuse "--fusion-plan-kernels=small-m=true decode-swap=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-fuse "--fusion-plan-kernels=small-m=true" --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-fuse "--fusion-to-gpu=format=isa small-m=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS

// Heads of 128: tiles of 256 (two heads), the small-M body's of 128 (one);
// no decode body (its threads hold a token's features across the
// warpgroup).
// PLAN-LABEL: remark: GEMM kernel on sm_90a
// PLAN-SAME: tile_n = 256
// PLAN: small-M GEMM kernel on sm_90a {{.*}}tile_n = 128
// PLAN: no decode GEMM body: the decode body's threads hold a token's features across the warpgroup, not a head's rotated pairs (rope)
// Phi-3's heads of 96: 192 columns, 64-column boxes of whole heads.
// PLAN: tile_n = 192

// The host passes both tables; the kernel reads their row m mod T
// (memref.dim of cos), and rotates with a multiply and an FMA per pair.
// CHECK-LABEL: func.func @llama_q_rope(
// CHECK-LABEL: gpu.func @llama_q_rope_kernel2
// CHECK-SAME: %[[COS:[a-z0-9]+]]: memref<?x?xbf16>, %[[SIN:[a-z0-9]+]]: memref<?x?xbf16>
// CHECK: memref.dim %[[COS]], %c0
// CHECK: arith.remui
// CHECK: vector.load %[[COS]]
// CHECK: vector.load %[[SIN]]
// CHECK: math.fma {{.*}} : vector<2xf32>
// CHECK-LABEL: gpu.func @gptj_rope_kernel
// CHECK: vector.shuffle {{.*}} [1, 0] : vector<2xf32>, vector<2xf32>
// CHECK: math.fma {{.*}} : vector<2xf32>

// PTXAS-DAG: ptxas ok: llama_q_rope_kernel{{[0-9]+}} registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: neox_rope_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: gptj_rope_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: phi3_qkv_rope_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: spills=[1-9]

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @llama_q_rope(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %wq: tensor<4096x4096xbf16>, %cos: tensor<?x128xbf16>, %sin: tensor<?x128xbf16>) -> tensor<?x4096xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<4096xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %q = fusion.matmul %n, %wq {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
  return %r : tensor<?x4096xbf16>
}

func.func @neox_rope(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %b: tensor<2048xbf16>, %cos: tensor<?x32xbf16>, %sin: tensor<?x32xbf16>) -> tensor<?x2048xbf16> {
  %q = fusion.matmul %x, %w bias(%b : tensor<2048xbf16>) {transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 128 : i64} : tensor<?x2048xbf16>, tensor<?x32xbf16> -> tensor<?x2048xbf16>
  return %r : tensor<?x2048xbf16>
}

func.func @gptj_rope(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %cos: tensor<?x64xf32>, %sin: tensor<?x64xf32>) -> tensor<?x1024xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 256 : i64, interleaved} : tensor<?x1024xbf16>, tensor<?x64xf32> -> tensor<?x1024xbf16>
  return %r : tensor<?x1024xbf16>
}

func.func @phi3_qkv_rope(%x: tensor<?x3072xbf16>, %w: tensor<3072x3072xbf16>, %cos: tensor<?x96xbf16>, %sin: tensor<?x96xbf16>) -> tensor<?x3072xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x3072xbf16>, tensor<3072x3072xbf16> -> tensor<?x3072xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 96 : i64} : tensor<?x3072xbf16>, tensor<?x96xbf16> -> tensor<?x3072xbf16>
  return %r : tensor<?x3072xbf16>
}
}
