// REQUIRES: ptxas
// Test that the sm_90a GEMM with a residual and no norm (Llama's o_proj /
// down_proj plus the residual stream, foldGemmResiduals) assembles without
// spilling: the residual's pairs are loaded chunk by chunk in the TMA
// store, the next chunk's before this chunk's buffer wait, not all at once
// beside the accumulator (140 bytes spilled at tile_n 256, 364 with
// col_bias), and col_bias's at their use (with the residual's, a chunk
// ahead, a pair of CTAs spilled 8-44 bytes); f32 outputs, stored from
// registers, a chunk's pairs before its stores (28 bytes spilled with
// col_bias). Dynamic M: the small-M body is in the same kernel. Every one
// of them is planned as a pair of CTAs (cluster_m = 2); PAIRS checks so.
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels | FileCheck %s --check-prefix=PAIRS
// PAIRS-COUNT-4: cluster_m = 2
// CHECK-DAG: ptxas ok: o_proj_h4096_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: c_proj_bias_h1000_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: c_proj_bias_h768_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: f32_out_bias_n4096_kernel0 registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @o_proj_h4096(%a: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>, %x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  %h = fusion.add %x, %p : tensor<?x4096xbf16>
  return %h : tensor<?x4096xbf16>
}
func.func @c_proj_bias_h1000(%a: tensor<?x1000xbf16>, %w: tensor<1000x1000xbf16>, %b: tensor<1000xbf16>, %x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  %p = fusion.matmul %a, %w bias(%b : tensor<1000xbf16>) {transpose_rhs} : tensor<?x1000xbf16>, tensor<1000x1000xbf16> -> tensor<?x1000xbf16>
  %h = fusion.add %x, %p : tensor<?x1000xbf16>
  return %h : tensor<?x1000xbf16>
}
func.func @c_proj_bias_h768(%a: tensor<?x768xbf16>, %w: tensor<768x768xbf16>, %b: tensor<768xbf16>, %x: tensor<?x768xbf16>) -> tensor<?x768xbf16> {
  %p = fusion.matmul %a, %w bias(%b : tensor<768xbf16>) {transpose_rhs} : tensor<?x768xbf16>, tensor<768x768xbf16> -> tensor<?x768xbf16>
  %h = fusion.add %x, %p : tensor<?x768xbf16>
  return %h : tensor<?x768xbf16>
}
// An f32 output (a fused_matmul written as such: the fold takes 16-bit
// sums only).
func.func @f32_out_bias_n4096(%a: tensor<?x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>, %x: tensor<?x4096xbf16>) -> tensor<?x4096xf32> {
  %y = fusion.fused_matmul %a, %w residual(%x : tensor<?x4096xbf16>) col_bias(%b : tensor<4096xbf16>) {transpose_rhs}
      : tensor<?x1024xbf16>, tensor<4096x1024xbf16> -> tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}
}
