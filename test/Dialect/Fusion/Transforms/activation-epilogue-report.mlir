// RUN: fusion-opt %s -split-input-file "-fusion-activation-epilogue=report=true" -verify-diagnostics | FileCheck %s

// fusion-activation-epilogue's decisions, one remark each.

// The gated MLP: one GEMM over both weights.
// CHECK-LABEL: func.func @gated
// CHECK: fusion.fused_matmul %arg0, %arg1 up(%arg2 : tensor<96x64xbf16>) {activation = #fusion.activation<silu>, transpose_rhs}
// CHECK-NOT: fusion.mul
func.func @gated(%x: tensor<?x64xbf16>, %wg: tensor<96x64xbf16>, %wu: tensor<96x64xbf16>) -> tensor<?x96xbf16> {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<?x96xbf16>
  // expected-remark @below {{fusion.mul gated product folded into one GEMM over both weights (activation silu, up)}}
  %h = fusion.mul %a, %u : tensor<?x96xbf16>
  return %h : tensor<?x96xbf16>
}

// -----

// An activation alone, its GEMM's bias kept as col_bias.
// CHECK-LABEL: func.func @alone
// CHECK: fusion.fused_matmul %arg0, %arg1 col_bias(%arg2 : tensor<96xbf16>) {activation = #fusion.activation<gelu>, transpose_rhs}
func.func @alone(%x: tensor<?x64xbf16>, %w: tensor<96x64xbf16>, %b: tensor<96xbf16>) -> tensor<?x96xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<96xbf16>) {transpose_rhs} : tensor<?x64xbf16>, tensor<96x64xbf16> -> tensor<?x96xbf16>
  // expected-remark @below {{fusion.activation folded into the GEMM's epilogue}}
  %a = fusion.activation %h {activation = #fusion.activation<gelu>} : tensor<?x96xbf16>
  return %a : tensor<?x96xbf16>
}

// -----

// No GEMM before it.
func.func @no_gemm(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  // expected-remark @below {{fusion.activation not fused into a GEMM epilogue: its input is not produced by a fusion.matmul or fusion.fused_matmul}}
  %a = fusion.activation %x {activation = #fusion.activation<relu>} : tensor<8x64xbf16>
  return %a : tensor<8x64xbf16>
}

// -----

// The GEMM's output is read elsewhere too.
func.func @shared(%x: tensor<8x64xbf16>, %w: tensor<64x96xbf16>) -> (tensor<8x96xbf16>, tensor<8x96xbf16>) {
  %h = fusion.matmul %x, %w : tensor<8x64xbf16>, tensor<64x96xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation not fused into a GEMM epilogue: the GEMM's output has users besides the activation}}
  %a = fusion.activation %h {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  return %a, %h : tensor<8x96xbf16>, tensor<8x96xbf16>
}

// -----

// The GEMM already scales its columns (fusion-fold-norm-weight's col_scale:
// the verifier takes no activation beside it).
// CHECK-LABEL: func.func @after_column_scale
// CHECK: fusion.activation
func.func @after_column_scale(%x: tensor<8x64xbf16>, %w: tensor<64x96xbf16>, %v: tensor<96xbf16>) -> tensor<8x96xbf16> {
  %h = fusion.fused_matmul %x, %w col_scale(%v : tensor<96xbf16>) : tensor<8x64xbf16>, tensor<64x96xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation not fused into a GEMM epilogue: the GEMM already scales its columns}}
  %a = fusion.activation %h {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  return %a : tensor<8x96xbf16>
}

// -----

// The GEMM already normalizes its output.
func.func @after_norm(%x: tensor<8x64xbf16>, %w: tensor<64x96xbf16>) -> tensor<8x96xbf16> {
  %h = fusion.fused_matmul %x, %w {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<8x64xbf16>, tensor<64x96xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation not fused into a GEMM epilogue: the GEMM has the rms_norm epilogue}}
  %a = fusion.activation %h {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  return %a : tensor<8x96xbf16>
}

// -----

// Two GEMMs over different inputs: the activation alone is folded.
// CHECK-LABEL: func.func @different_lhs
// CHECK: %[[A:.*]] = fusion.fused_matmul %arg0, %arg2 {activation = #fusion.activation<silu>}
// CHECK: fusion.mul %[[A]]
func.func @different_lhs(%x: tensor<8x64xbf16>, %y: tensor<8x64xbf16>, %wg: tensor<64x96xbf16>, %wu: tensor<64x96xbf16>) -> tensor<8x96xbf16> {
  %g = fusion.matmul %x, %wg : tensor<8x64xbf16>, tensor<64x96xbf16> -> tensor<8x96xbf16>
  %u = fusion.matmul %y, %wu : tensor<8x64xbf16>, tensor<64x96xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation folded into the GEMM's epilogue (not gated: the two GEMMs read different left operands)}}
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  %h = fusion.mul %a, %u : tensor<8x96xbf16>
  return %h : tensor<8x96xbf16>
}

// -----

// A bias on the up projection.
func.func @up_bias(%x: tensor<8x64xbf16>, %wg: tensor<96x64xbf16>, %wu: tensor<96x64xbf16>, %b: tensor<96xbf16>) -> tensor<8x96xbf16> {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<8x64xbf16>, tensor<96x64xbf16> -> tensor<8x96xbf16>
  %u = fusion.matmul %x, %wu bias(%b : tensor<96xbf16>) {transpose_rhs} : tensor<8x64xbf16>, tensor<96x64xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation folded into the GEMM's epilogue (not gated: a GEMM of the pair adds a bias (the gated product takes none))}}
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  %h = fusion.mul %a, %u : tensor<8x96xbf16>
  return %h : tensor<8x96xbf16>
}

// -----

// The up projection's output is read elsewhere too.
func.func @up_shared(%x: tensor<8x64xbf16>, %wg: tensor<96x64xbf16>, %wu: tensor<96x64xbf16>) -> (tensor<8x96xbf16>, tensor<8x96xbf16>) {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<8x64xbf16>, tensor<96x64xbf16> -> tensor<8x96xbf16>
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<8x64xbf16>, tensor<96x64xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation folded into the GEMM's epilogue (not gated: the up GEMM's output has users besides the product)}}
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  %h = fusion.mul %a, %u : tensor<8x96xbf16>
  return %h, %u : tensor<8x96xbf16>, tensor<8x96xbf16>
}

// -----

// Weights of different layouts.
func.func @transposes(%x: tensor<8x64xbf16>, %wg: tensor<96x64xbf16>, %wu: tensor<64x96xbf16>) -> tensor<8x96xbf16> {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<8x64xbf16>, tensor<96x64xbf16> -> tensor<8x96xbf16>
  %u = fusion.matmul %x, %wu : tensor<8x64xbf16>, tensor<64x96xbf16> -> tensor<8x96xbf16>
  // expected-remark @below {{fusion.activation folded into the GEMM's epilogue (not gated: the two GEMMs transpose their operands differently)}}
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<8x96xbf16>
  %h = fusion.mul %a, %u : tensor<8x96xbf16>
  return %h : tensor<8x96xbf16>
}
