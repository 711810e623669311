// RUN: fusion-opt %s -fusion-cpu-entry-points | FileCheck %s
// Test that a library's description names each dynamic size the function's
// ops tie to another argument's or result's (s0, s1, ... in order of
// appearance), so that the loader checks that a call's tensors agree on it,
// writes a dynamic size tied to a static one as that size, and leaves `?`
// where nothing ties it: the rows of a GEMM's output to its lhs's and its
// residual's, K across a transposed rhs, a broadcast bias's columns, a
// norm's statistics, attention's batch, reshapes, linalg's loops.

// Rows of x, the residual, the row scale and the output; K of x and the
// nn.Linear weight [N, K].
// CHECK-DAG: @__fusion_signature_gemm("arg0: bf16[s0,s1]; arg1: bf16[64,s1]; arg2: bf16[s0,64]; arg3: f32[s0]; result0: bf16[s0,64]\00")
func.func @gemm(%x: tensor<?x?xbf16>, %w: tensor<64x?xbf16>, %r: tensor<?x64xbf16>, %s: tensor<?xf32>) -> tensor<?x64xbf16> {
  %y = fusion.fused_matmul %x, %w residual(%r : tensor<?x64xbf16>) row_scale(%s : tensor<?xf32>) {epilogue = #fusion.epilogue<row_scale>, transpose_rhs}
      : tensor<?x?xbf16>, tensor<64x?xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// A bias over the output's columns, N dynamic too.
// CHECK-DAG: @__fusion_signature_linear("arg0: f32[s0,32]; arg1: f32[32,s1]; arg2: f32[s1]; result0: f32[s0,s1]\00")
func.func @linear(%x: tensor<?x32xf32>, %w: tensor<32x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %y = fusion.matmul %x, %w bias(%b : tensor<?xf32>) : tensor<?x32xf32>, tensor<32x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// A dynamic size tied to a static one is that size: the residual has 8 rows.
// CHECK-DAG: @__fusion_signature_fixed("arg0: f32[8,64]; arg1: f32[8,64]; result0: f32[8,64]\00")
func.func @fixed(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> tensor<?x64xf32> {
  %y = fusion.add %x, %r : tensor<?x64xf32>, tensor<8x64xf32>
  return %y : tensor<?x64xf32>
}

// Two independent row counts; the weight's 1 broadcasts, ties nothing.
// CHECK-DAG: @__fusion_signature_two("arg0: f32[s0,64]; arg1: f32[s1,64]; arg2: f32[1,64]; result0: f32[s0,64]; result1: f32[s1]\00")
func.func @two(%x: tensor<?x64xf32>, %z: tensor<?x64xf32>, %g: tensor<1x64xf32>) -> (tensor<?x64xf32>, tensor<?xf32>) {
  %y = fusion.mul %x, %g : tensor<?x64xf32>, tensor<1x64xf32>
  %n, %r = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<?x64xf32> -> tensor<?x64xf32>, tensor<?xf32>
  return %y, %r : tensor<?x64xf32>, tensor<?xf32>
}

// One dynamic size nothing else has stays `?`.
// CHECK-DAG: @__fusion_signature_alone("arg0: f32[?,64]; result0: f32[64]\00")
func.func @alone(%x: tensor<?x64xf32>) -> tensor<64xf32> {
  %c = arith.constant dense<1.0> : tensor<64xf32>
  return %c : tensor<64xf32>
}

// Attention: q, k, v and the output share the batch; k and v the keys.
// CHECK-DAG: @__fusion_signature_attention("arg0: bf16[s0,64,2,32]; arg1: bf16[s0,s1,2,32]; arg2: bf16[s0,s1,2,32]; result0: bf16[s0,64,2,32]\00")
func.func @attention(%q: tensor<?x64x2x32xbf16>, %k: tensor<?x?x2x32xbf16>, %v: tensor<?x?x2x32xbf16>) -> tensor<?x64x2x32xbf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x64x2x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x32xbf16> -> tensor<?x64x2x32xbf16>
  return %o : tensor<?x64x2x32xbf16>
}

// Per-head norms through reshapes: [?, 64] as [?, 4, 16] and back; the
// collapsed [B * L] of a [B, L, 64] input ties neither B nor L.
// CHECK-DAG: @__fusion_signature_heads("arg0: bf16[s0,64]; arg1: bf16[?,?,64]; result0: bf16[s0,64]; result1: bf16[?,64]\00")
func.func @heads(%x: tensor<?x64xbf16>, %t: tensor<?x?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xbf16>
  %h = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, 4, 16] : tensor<?x64xbf16> into tensor<?x4x16xbf16>
  %n = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<?x4x16xbf16> -> tensor<?x4x16xbf16>
  %y = tensor.collapse_shape %n [[0], [1, 2]] : tensor<?x4x16xbf16> into tensor<?x64xbf16>
  %f = tensor.collapse_shape %t [[0, 1], [2]] : tensor<?x?x64xbf16> into tensor<?x64xbf16>
  return %y, %f : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// linalg: the broadcast's rows are its init's, the init's rows are x's
// (tensor.empty of tensor.dim); an elementwise arith op ties its operands.
// CHECK-DAG: @__fusion_signature_broadcast("arg0: f32[s0,64]; arg1: f32[64]; result0: f32[s0,64]\00")
func.func @broadcast(%x: tensor<?x64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %bb = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<?x64xf32>) dimensions = [0]
  %y = arith.addf %bb, %x : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// rope: the tables' rows are the input's; a table of 1 serves every batch.
// CHECK-DAG: @__fusion_signature_rope("arg0: bf16[3,s0,256]; arg1: bf16[1,s0,64]; arg2: bf16[1,s0,64]; result0: bf16[3,s0,256]\00")
func.func @rope(%x: tensor<3x?x256xbf16>, %c: tensor<1x?x64xbf16>, %s: tensor<1x?x64xbf16>) -> tensor<3x?x256xbf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 64 : i64} : tensor<3x?x256xbf16>, tensor<1x?x64xbf16> -> tensor<3x?x256xbf16>
  return %y : tensor<3x?x256xbf16>
}
