// RUN: fusion-opt %s -split-input-file "-fusion-rope-epilogue=report=true" -verify-diagnostics | FileCheck %s

// fusion-rope-epilogue's decisions, one remark each.

// q_proj and its rotary embedding: one GEMM.
// CHECK-LABEL: func.func @q_proj
// CHECK: fusion.fused_matmul %arg0, %arg1 rope(%arg2, %arg3 : tensor<?x128xbf16>, tensor<?x128xbf16>) {rope_head_dim = 128 : i64, transpose_rhs}
// CHECK-NOT: fusion.rope
func.func @q_proj(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %c: tensor<?x128xbf16>, %s: tensor<?x128xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope folded into the GEMM's epilogue (rope_head_dim 128)}}
  %r = fusion.rope %q, %c, %s {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}

// -----

// The projection's output is also returned: the rope stays.
// CHECK-LABEL: func.func @q_also_returned
// CHECK: fusion.rope
func.func @q_also_returned(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %c: tensor<?x128xbf16>) -> (tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: the GEMM's result has other users}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64, interleaved} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %q, %r : tensor<?x256xbf16>, tensor<?x256xbf16>
}

// -----

// Not a GEMM's output.
func.func @not_a_gemm(%q: tensor<?x256xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x256xbf16> {
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: its input is not produced by a fusion.matmul or fused_matmul}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}

// -----

// A GEMM that scales its columns (the verifier takes no rope beside it).
// CHECK-LABEL: func.func @after_column_scale
// CHECK: fusion.rope
func.func @after_column_scale(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %v: tensor<256xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.fused_matmul %x, %w col_scale(%v : tensor<256xbf16>) {transpose_rhs}
      : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: the GEMM already scales its columns}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}

// -----

// A GEMM with a norm epilogue (its output normalized first).
func.func @after_norm(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %g: tensor<256xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.fused_matmul %x, %w norm_weight(%g : tensor<256xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
      : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: the GEMM has the rms_norm epilogue}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}

// -----

// With a fusion.target, what its GEMM kernel cannot rotate stays a rope
// (its row kernel): rotate-half partners in whole 8-column groups of a
// thread need R a multiple of 16; a tile of whole heads of 80 columns in
// 64-column boxes would be 320 wide.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rotary_24(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %c: tensor<?x24xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: the rotary dimension 24 is not a multiple of 16 (rotate-half partners in whole 8-column groups)}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x24xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}
func.func @heads_of_80(%x: tensor<?x64xbf16>, %w: tensor<320x64xbf16>, %c: tensor<?x32xbf16>) -> tensor<?x320xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<320x64xbf16> -> tensor<?x320xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: a tile of whole heads of 80 columns in 64-column boxes is 320 wide, wider than the widest tile (256)}}
  %r = fusion.rope %q, %c, %c {head_dim = 80 : i64} : tensor<?x320xbf16>, tensor<?x32xbf16> -> tensor<?x320xbf16>
  return %r : tensor<?x320xbf16>
}
// Interleaved pairs need R a multiple of 8 only.
// CHECK-LABEL: func.func @interleaved_24
// CHECK: rope(%arg2, %arg2 : tensor<?x24xbf16>, tensor<?x24xbf16>) {rope_head_dim = 128 : i64, rope_interleaved, transpose_rhs}
func.func @interleaved_24(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %c: tensor<?x24xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope folded into the GEMM's epilogue (rope_head_dim 128, interleaved)}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64, interleaved} : tensor<?x256xbf16>, tensor<?x24xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}
}

// -----

// sm_100a's GEMM kernel rotates as sm_90a's does (the same rule), and
// refuses what sm_90a's refuses: heads of 320 need tiles of 320, wider than
// its widest (256).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @blackwell(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope folded into the GEMM's epilogue (rope_head_dim 128)}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}
func.func @blackwell_wide_heads(%x: tensor<?x64xbf16>, %w: tensor<640x64xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x640xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<640x64xbf16> -> tensor<?x640xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: a tile of whole heads of 320 columns in 64-column boxes is 320 wide, wider than the widest tile (256)}}
  %r = fusion.rope %q, %c, %c {head_dim = 320 : i64} : tensor<?x640xbf16>, tensor<?x128xbf16> -> tensor<?x640xbf16>
  return %r : tensor<?x640xbf16>
}
}
