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

// A GEMM with a norm epilogue (its output normalized first).
func.func @after_norm(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %g: tensor<256xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x256xbf16> {
  %q = fusion.fused_matmul %x, %w norm_weight(%g : tensor<256xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
      : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  // expected-remark @below {{fusion.rope not folded into a GEMM epilogue: the GEMM has the rms_norm epilogue}}
  %r = fusion.rope %q, %c, %c {head_dim = 128 : i64} : tensor<?x256xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %r : tensor<?x256xbf16>
}
