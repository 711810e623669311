// A projection's rotary embedding folded into its GEMM (fusion-rope-epilogue,
// in fusion-fuse unless rope-epilogue=false): each function runs on the CPU on
// the same random inputs before and after (the rotation of the f32
// accumulator rounded once, where the unfused program rounds the GEMM's
// output first: within a few bf16 ulps).
// RUN: fusion-runner %s -e q_proj --after-passes='fusion-rope-epilogue' --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e q_proj_bias_pairs --after-passes='fusion-rope-epilogue' --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e llama_q --after-passes='fusion-fuse' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e q_proj_bf16_batch --after-passes='fusion-rope-epilogue' --atol=3e-2 --rtol=2e-2 | FileCheck %s
// The rewrites happened: one GEMM each, no rope left; with rope-epilogue=false
// fusion-fuse leaves the rope.
// RUN: fusion-opt %s -fusion-fuse | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s -fusion-fuse='rope-epilogue=false' | FileCheck %s --check-prefix=OFF
// And a wrong rewrite would be caught: the tables swapped differ.
// RUN: not fusion-runner %s -e q_proj --compare=q_proj_swapped --atol=1e-3 --rtol=1e-3 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-LABEL: func.func @q_proj(
// IR: fusion.fused_matmul %arg0, %arg1 rope(%arg2, %arg3 : tensor<16x16xf32>, tensor<16x16xf32>) {rope_head_dim = 16 : i64, transpose_rhs}
// IR-NOT: fusion.rope
// IR-LABEL: func.func @q_proj_bias_pairs(
// IR: fusion.fused_matmul %arg0, %arg1 col_bias(%arg2 : tensor<32xf32>) rope(%arg3, %arg4 : tensor<16x8xf32>, tensor<16x8xf32>) {rope_head_dim = 16 : i64, rope_interleaved, transpose_rhs}
// IR-LABEL: func.func @llama_q(
// IR: fusion.fused_matmul %arg0, %{{.*}} rope(%arg3, %arg4 : tensor<16x16xf32>, tensor<16x16xf32>) {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 9.99999997E-7 : f32, rope_head_dim = 16 : i64, transpose_rhs}
// IR-NOT: fusion.rms_norm
// IR-LABEL: func.func @q_proj_bf16_batch(
// IR: rope(%arg2, %arg3 : tensor<1x16xbf16>, tensor<1x16xbf16>) {rope_head_dim = 32 : i64, transpose_rhs}
// OFF-LABEL: func.func @q_proj(
// OFF: fusion.rope

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// 16 tokens, 2 heads of 16 (q_proj [32, 64] as nn.Linear's [out, in]).
func.func @q_proj(%x: tensor<16x64xf32>, %w: tensor<32x64xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<16x32xf32> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  %r = fusion.rope %q, %cos, %sin {head_dim = 16 : i64} : tensor<16x32xf32>, tensor<16x16xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}
// Negative: the cos and sin tables swapped.
func.func @q_proj_swapped(%x: tensor<16x64xf32>, %w: tensor<32x64xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<16x32xf32> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  %r = fusion.rope %q, %sin, %cos {head_dim = 16 : i64} : tensor<16x32xf32>, tensor<16x16xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// Qwen2's q_proj has a bias; GPT-J's pairs over 8 of each head of 16.
func.func @q_proj_bias_pairs(%x: tensor<16x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>) -> tensor<16x32xf32> {
  %q = fusion.matmul %x, %w bias(%b : tensor<32xf32>) {transpose_rhs} : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  %r = fusion.rope %q, %cos, %sin {head_dim = 16 : i64, interleaved} : tensor<16x32xf32>, tensor<16x8xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// Llama's attention input: RMSNorm (weight g), q_proj, rope. Lazy Pre-Norm
// makes the first two one GEMM; the rope then joins it.
func.func @llama_q(%x: tensor<16x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<16x32xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<16x64xf32> -> tensor<16x64xf32>
  %q = fusion.matmul %n, %w {transpose_rhs} : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<16x32xf32>
  %r = fusion.rope %q, %cos, %sin {head_dim = 16 : i64} : tensor<16x32xf32>, tensor<16x16xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// bf16, one table row for every token (T = 1 divides M), heads of 32
// rotated over their first 16 columns.
func.func @q_proj_bf16_batch(%x: tensor<12x64xbf16>, %w: tensor<64x64xbf16>, %cos: tensor<1x16xbf16>, %sin: tensor<1x16xbf16>) -> tensor<12x64xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<12x64xbf16>, tensor<64x64xbf16> -> tensor<12x64xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 32 : i64} : tensor<12x64xbf16>, tensor<1x16xbf16> -> tensor<12x64xbf16>
  return %r : tensor<12x64xbf16>
}
}
