// REQUIRES: ptxas
// The sm_100a GEMM kernel's activation epilogue (the epilogue warpgroup
// applies it to each 8-column group it stores): GPT-2's gelu_tanh with
// fc1's bias, the exact gelu, silu with an f32 output; and the gated
// product (the accumulator stage's first half from the gate's weight, its
// second from up's: output chunk c is act(chunk c) * chunk c + 2), with
// the Lazy Pre-Norm prologue of its RMSNorm too. Each assembles without
// spilling (not run: no B200 here).
// RUN: fusion-opt %s --fusion-fuse --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s
// RUN: fusion-opt %s "--fusion-fuse=report=true" 2>&1 | FileCheck %s --check-prefix=FUSE
// CHECK-DAG: ptxas ok: gpt2_fc1_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: bert_gelu_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: silu_f32_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gated_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gated_prenorm_kernel{{[0-9]+}} registers={{[0-9]+}} spills=0
// CHECK-NOT: spills=[1-9]
// FUSE: remark: fusion.mul gated product folded into one GEMM over both weights (activation silu, up)
// FUSE-LABEL: func.func @gated
// FUSE: fusion.fused_matmul %arg0, %arg1 up(%arg2 : tensor<1024x512xbf16>) {activation = #fusion.activation<silu>, transpose_rhs}

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @gpt2_fc1(%x: tensor<?x768xbf16>, %w: tensor<3072x768xbf16>, %b: tensor<3072xbf16>) -> tensor<?x3072xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<3072xbf16>) {transpose_rhs} : tensor<?x768xbf16>, tensor<3072x768xbf16> -> tensor<?x3072xbf16>
  %a = fusion.activation %h {activation = #fusion.activation<gelu_tanh>} : tensor<?x3072xbf16>
  return %a : tensor<?x3072xbf16>
}
func.func @bert_gelu(%x: tensor<8192x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<4096xbf16>) {transpose_rhs} : tensor<8192x1024xbf16>, tensor<4096x1024xbf16> -> tensor<8192x4096xbf16>
  %a = fusion.activation %h {activation = #fusion.activation<gelu>} : tensor<8192x4096xbf16>
  return %a : tensor<8192x4096xbf16>
}
func.func @silu_f32(%x: tensor<8192x512xbf16>, %w: tensor<512x1024xbf16>) -> tensor<8192x1024xf32> {
  %h = fusion.matmul %x, %w : tensor<8192x512xbf16>, tensor<512x1024xbf16> -> tensor<8192x1024xf32>
  %a = fusion.activation %h {activation = #fusion.activation<silu>} : tensor<8192x1024xf32>
  return %a : tensor<8192x1024xf32>
}
func.func @gated(%x: tensor<8192x512xbf16>, %wg: tensor<1024x512xbf16>, %wu: tensor<1024x512xbf16>) -> tensor<8192x1024xbf16> {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<8192x512xbf16>, tensor<1024x512xbf16> -> tensor<8192x1024xbf16>
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<8192x512xbf16>, tensor<1024x512xbf16> -> tensor<8192x1024xbf16>
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<8192x1024xbf16>
  %h = fusion.mul %a, %u : tensor<8192x1024xbf16>
  return %h : tensor<8192x1024xbf16>
}
func.func @gated_prenorm(%x: tensor<?x2048xbf16>, %g: tensor<2048xbf16>, %wg: tensor<5632x2048xbf16>, %wu: tensor<5632x2048xbf16>) -> tensor<?x5632xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<2048xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x2048xbf16> -> tensor<?x2048xbf16>
  %a = fusion.matmul %n, %wg {transpose_rhs} : tensor<?x2048xbf16>, tensor<5632x2048xbf16> -> tensor<?x5632xbf16>
  %u = fusion.matmul %n, %wu {transpose_rhs} : tensor<?x2048xbf16>, tensor<5632x2048xbf16> -> tensor<?x5632xbf16>
  %s = fusion.activation %a {activation = #fusion.activation<silu>} : tensor<?x5632xbf16>
  %h = fusion.mul %s, %u : tensor<?x5632xbf16>
  return %h : tensor<?x5632xbf16>
}
}
