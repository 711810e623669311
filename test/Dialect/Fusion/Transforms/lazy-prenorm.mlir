// RUN: fusion-opt %s -split-input-file -fusion-lazy-prenorm | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-lazy-prenorm=layer-norm=true | FileCheck %s --check-prefix=LN

// An RMSNorm feeding one matmul becomes the lazy prologue of a fused_matmul.
// CHECK-LABEL: func.func @rms_one_user
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xbf16>, %[[B:.*]]: tensor<128x256xbf16>)
// CHECK: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[B]]
// CHECK-SAME: prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 9.99999997E-7 : f32
// CHECK-NOT: fusion.rms_norm
// CHECK-NOT: fusion.matmul
// CHECK: return %[[C]]
func.func @rms_one_user(%x: tensor<64x128xbf16>, %b: tensor<128x256xbf16>) -> tensor<64x256xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-06 : f32} : tensor<64x128xbf16> -> tensor<64x128xbf16>
  %c = fusion.matmul %n, %b : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  return %c : tensor<64x256xbf16>
}

// -----

// Each of several consuming matmuls (a QKV-style fan-out) gets its own fused op;
// transpose_rhs is kept.
// CHECK-LABEL: func.func @rms_fan_out
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>, %[[B1:.*]]: tensor<128x32xf32>, %[[B2:.*]]: tensor<16x128xf32>)
// CHECK-DAG: %[[C1:.*]] = fusion.fused_matmul %[[X]], %[[B1]] {prologue = #fusion.prologue<rms_norm>
// CHECK-DAG: %[[C2:.*]] = fusion.fused_matmul %[[X]], %[[B2]] {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = {{.*}}, transpose_rhs}
// CHECK-NOT: fusion.rms_norm
// CHECK: return %[[C1]], %[[C2]]
func.func @rms_fan_out(%x: tensor<64x128xf32>, %b1: tensor<128x32xf32>, %b2: tensor<16x128xf32>) -> (tensor<64x32xf32>, tensor<64x16xf32>) {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x128xf32> -> tensor<64x128xf32>
  %c1 = fusion.matmul %n, %b1 : tensor<64x128xf32>, tensor<128x32xf32> -> tensor<64x32xf32>
  %c2 = fusion.matmul %n, %b2 {transpose_rhs} : tensor<64x128xf32>, tensor<16x128xf32> -> tensor<64x16xf32>
  return %c1, %c2 : tensor<64x32xf32>, tensor<64x16xf32>
}

// -----

// A weight on a non-constant B [K, N] is folded by a fusion.mul with the
// weight as a column [K, 1] (dynamic M).
// CHECK-LABEL: func.func @rms_weight_runtime
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xbf16>, %[[B:.*]]: tensor<16x4xbf16>, %[[G:.*]]: tensor<16xbf16>)
// CHECK: %[[GC:.*]] = tensor.expand_shape %[[G]] {{\[\[}}0, 1]] output_shape [16, 1] : tensor<16xbf16> into tensor<16x1xbf16>
// CHECK: %[[BG:.*]] = fusion.mul %[[B]], %[[GC]] : tensor<16x4xbf16>, tensor<16x1xbf16>
// CHECK: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[BG]] {prologue = #fusion.prologue<rms_norm>
// CHECK-SAME: : tensor<?x16xbf16>, tensor<16x4xbf16> -> tensor<?x4xbf16>
// CHECK: return %[[C]]
func.func @rms_weight_runtime(%x: tensor<?x16xbf16>, %b: tensor<16x4xbf16>, %g: tensor<16xbf16>) -> tensor<?x4xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x16xbf16> -> tensor<?x16xbf16>
  %c = fusion.matmul %n, %b : tensor<?x16xbf16>, tensor<16x4xbf16> -> tensor<?x4xbf16>
  return %c : tensor<?x4xbf16>
}

// -----

// nn.Linear's weight [N, K] (transpose_rhs): the norm weight broadcasts over
// its rows, no reshape (the Llama pre-norm, dynamic token count).
// CHECK-LABEL: func.func @rms_weight_runtime_linear
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16>, %[[W:.*]]: tensor<128x64xbf16>, %[[G:.*]]: tensor<64xbf16>)
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[WG:.*]] = fusion.mul %[[W]], %[[G]] : tensor<128x64xbf16>, tensor<64xbf16>
// CHECK: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[WG]] {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = {{.*}}, transpose_rhs}
// CHECK-NOT: fusion.matmul
// CHECK: return %[[C]]
func.func @rms_weight_runtime_linear(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>, %g: tensor<64xbf16>) -> tensor<?x128xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x64xbf16> -> tensor<?x64xbf16>
  %c = fusion.matmul %n, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  return %c : tensor<?x128xbf16>
}

// -----

// A consuming linear's own bias becomes the col_bias as it is.
// CHECK-LABEL: func.func @rms_linear_bias
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xbf16>, %[[W:.*]]: tensor<4x16xbf16>, %[[B:.*]]: tensor<4xbf16>)
// CHECK: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[W]] col_bias(%[[B]] : tensor<4xbf16>) {prologue = #fusion.prologue<rms_norm>
// CHECK-NOT: fusion.matmul
// CHECK: return %[[C]]
func.func @rms_linear_bias(%x: tensor<8x16xbf16>, %w: tensor<4x16xbf16>, %b: tensor<4xbf16>) -> tensor<8x4xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xbf16> -> tensor<8x16xbf16>
  %c = fusion.matmul %n, %w bias(%b : tensor<4xbf16>) {transpose_rhs} : tensor<8x16xbf16>, tensor<4x16xbf16> -> tensor<8x4xbf16>
  return %c : tensor<8x4xbf16>
}

// -----

// A constant weight on a constant B is folded at compile time: diag(g) B.
// CHECK-LABEL: func.func @rms_weight_constant
// CHECK: %[[BG:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 4.000000e+00], [-1.500000e+00, -2.000000e+00]]> : tensor<2x2xf32>
// CHECK: fusion.fused_matmul %{{.*}}, %[[BG]]
// CHECK-NOT: linalg.generic
func.func @rms_weight_constant(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %g = arith.constant dense<[2.0, -0.5]> : tensor<2xf32>
  %n = fusion.rms_norm %x weight(%g : tensor<2xf32>) {epsilon = 1.0e-05 : f32} : tensor<3x2xf32> -> tensor<3x2xf32>
  %c = fusion.matmul %n, %b : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}

// -----

// With transpose_rhs, B is stored [N, K] and the weight scales its columns.
// CHECK-LABEL: func.func @rms_weight_constant_transposed
// CHECK: %[[BG:.*]] = arith.constant dense<{{\[}}[2.000000e+00, -1.000000e+00], [6.000000e+00, -2.000000e+00]]> : tensor<2x2xf32>
// CHECK: fusion.fused_matmul %{{.*}}, %[[BG]] {{.*}}transpose_rhs
func.func @rms_weight_constant_transposed(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %g = arith.constant dense<[2.0, -0.5]> : tensor<2xf32>
  %n = fusion.rms_norm %x weight(%g : tensor<2xf32>) {epsilon = 1.0e-05 : f32} : tensor<3x2xf32> -> tensor<3x2xf32>
  %c = fusion.matmul %n, %b {transpose_rhs} : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}

// -----

// Not applied: the normalized tensor is also returned, so the norm would stay.
// CHECK-LABEL: func.func @other_user
// CHECK: %[[N:.*]] = fusion.rms_norm
// CHECK: fusion.matmul %[[N]]
// CHECK-NOT: fusion.fused_matmul
func.func @other_user(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c, %n : tensor<8x4xf32>, tensor<8x16xf32>
}

// -----

// Not applied: the rstd statistic is used; the fused GEMM does not produce it.
// CHECK-LABEL: func.func @stats_used
// CHECK: fusion.rms_norm
// CHECK: fusion.matmul
// CHECK-NOT: fusion.fused_matmul
func.func @stats_used(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8xf32>) {
  %n, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c, %r : tensor<8x4xf32>, tensor<8xf32>
}

// -----

// Not applied: the normalized tensor is the right operand (the norm runs over
// B's columns, not over the rows the prologue sees).
// CHECK-LABEL: func.func @as_rhs
// CHECK: fusion.rms_norm
// CHECK: fusion.matmul
// CHECK-NOT: fusion.fused_matmul
func.func @as_rhs(%x: tensor<16x16xf32>, %a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<16x16xf32> -> tensor<16x16xf32>
  %c = fusion.matmul %a, %n : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// Not applied: a transposed left operand contracts over the rows.
// CHECK-LABEL: func.func @transposed_lhs
// CHECK: fusion.rms_norm
// CHECK: fusion.matmul %{{.*}} {transpose_lhs}
// CHECK-NOT: fusion.fused_matmul
func.func @transposed_lhs(%x: tensor<16x8xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<16x8xf32> -> tensor<16x8xf32>
  %c = fusion.matmul %n, %b {transpose_lhs} : tensor<16x8xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// Not applied: a 3-D norm input is not a GEMM operand.
// CHECK-LABEL: func.func @rank3
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.fused_matmul
func.func @rank3(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %n : tensor<2x8x16xf32>
}

// -----

// LayerNorm is deferred only with layer-norm=true; weight into B, bias into
// col_bias as beta B: a 1-row fusion.matmul of beta as [1, K] with B.
// CHECK-LABEL: func.func @layer_norm
// CHECK: fusion.layer_norm
// CHECK: fusion.matmul
// CHECK-NOT: fusion.fused_matmul
// LN-LABEL: func.func @layer_norm
// LN-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16x4xf32>, %[[W:.*]]: tensor<16xf32>, %[[BETA:.*]]: tensor<16xf32>)
// LN-DAG: %[[ROW:.*]] = tensor.expand_shape %[[BETA]] {{\[\[}}0, 1]] output_shape [1, 16] : tensor<16xf32> into tensor<1x16xf32>
// LN-DAG: %[[BB:.*]] = fusion.matmul %[[ROW]], %[[B]] : tensor<1x16xf32>, tensor<16x4xf32> -> tensor<1x4xf32>
// LN-DAG: %[[CB:.*]] = tensor.collapse_shape %[[BB]] {{\[\[}}0, 1]] : tensor<1x4xf32> into tensor<4xf32>
// LN-DAG: %[[WC:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
// LN-DAG: %[[BW:.*]] = fusion.mul %[[B]], %[[WC]] : tensor<16x4xf32>, tensor<16x1xf32>
// LN: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[BW]] col_bias(%[[CB]] : tensor<4xf32>) {prologue = #fusion.prologue<layer_norm>
// LN-NOT: fusion.layer_norm
// LN: return %[[C]]
func.func @layer_norm(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>, %w: tensor<16xf32>, %beta: tensor<16xf32>) -> tensor<8x4xf32> {
  %n, %m, %r = fusion.layer_norm %x weight(%w : tensor<16xf32>) bias(%beta : tensor<16xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// A LayerNorm bias before a linear with bias (bf16, weight [N, K]): beta W^T
// in f32, then a fusion.add of the linear's bias.
// LN-LABEL: func.func @layer_norm_linear_bias
// LN-SAME: (%[[X:.*]]: tensor<?x16xbf16>, %[[W:.*]]: tensor<4x16xbf16>, %[[B:.*]]: tensor<4xbf16>, %[[BETA:.*]]: tensor<16xbf16>)
// LN: %[[ROW:.*]] = tensor.expand_shape %[[BETA]] {{\[\[}}0, 1]] output_shape [1, 16] : tensor<16xbf16> into tensor<1x16xbf16>
// LN: %[[BB:.*]] = fusion.matmul %[[ROW]], %[[W]] {transpose_rhs} : tensor<1x16xbf16>, tensor<4x16xbf16> -> tensor<1x4xf32>
// LN: %[[BBV:.*]] = tensor.collapse_shape %[[BB]] {{\[\[}}0, 1]] : tensor<1x4xf32> into tensor<4xf32>
// LN: %[[CB:.*]] = fusion.add %[[BBV]], %[[B]] : tensor<4xf32>, tensor<4xbf16>
// LN: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[W]] col_bias(%[[CB]] : tensor<4xf32>) {prologue = #fusion.prologue<layer_norm>, {{.*}}transpose_rhs}
// LN: return %[[C]]
func.func @layer_norm_linear_bias(%x: tensor<?x16xbf16>, %w: tensor<4x16xbf16>, %b: tensor<4xbf16>, %beta: tensor<16xbf16>) -> tensor<?x4xbf16> {
  %n, %m, %r = fusion.layer_norm %x bias(%beta : tensor<16xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<?x16xbf16> -> tensor<?x16xbf16>, tensor<?xf32>, tensor<?xf32>
  %c = fusion.matmul %n, %w bias(%b : tensor<4xbf16>) {transpose_rhs} : tensor<?x16xbf16>, tensor<4x16xbf16> -> tensor<?x4xbf16>
  return %c : tensor<?x4xbf16>
}

// -----

// Constant beta, B and linear bias: the column bias is one f32 constant,
// beta B + bias = [1*1 + 2*3 + 0.5, 1*2 + 2*4 - 1] = [7.5, 9].
// LN-LABEL: func.func @layer_norm_constant_bias
// LN: %[[CB:.*]] = arith.constant dense<[7.500000e+00, 9.000000e+00]> : tensor<2xf32>
// LN: fusion.fused_matmul %{{.*}}, %{{.*}} col_bias(%[[CB]] : tensor<2xf32>) {prologue = #fusion.prologue<layer_norm>
// LN-NOT: fusion.matmul
// LN-NOT: fusion.add
func.func @layer_norm_constant_bias(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %beta = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bias = arith.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %n, %m, %r = fusion.layer_norm %x bias(%beta : tensor<2xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<3x2xf32> -> tensor<3x2xf32>, tensor<3xf32>, tensor<3xf32>
  %c = fusion.matmul %n, %b bias(%bias : tensor<2xf32>) : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}
