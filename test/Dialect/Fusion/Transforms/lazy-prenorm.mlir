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

// A weight on a non-constant B is folded by a linalg.generic scaling B's rows.
// CHECK-LABEL: func.func @rms_weight_runtime
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xbf16>, %[[B:.*]]: tensor<16x4xbf16>, %[[G:.*]]: tensor<16xbf16>)
// CHECK: %[[BG:.*]] = linalg.generic
// CHECK-SAME: ins(%[[B]], %[[G]] : tensor<16x4xbf16>, tensor<16xbf16>)
// CHECK: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[BG]] {prologue = #fusion.prologue<rms_norm>
// CHECK: return %[[C]]
func.func @rms_weight_runtime(%x: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %g: tensor<16xbf16>) -> tensor<8x4xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<16xbf16>) {epsilon = 1.0e-05 : f32} : tensor<8x16xbf16> -> tensor<8x16xbf16>
  %c = fusion.matmul %n, %b : tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
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

// LayerNorm is deferred only with layer-norm=true; weight into B, bias into col_bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK: fusion.layer_norm
// CHECK: fusion.matmul
// CHECK-NOT: fusion.fused_matmul
// LN-LABEL: func.func @layer_norm
// LN-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16x4xf32>, %[[W:.*]]: tensor<16xf32>, %[[BETA:.*]]: tensor<16xf32>)
// LN-DAG: %[[CB:.*]] = linalg.generic {{.*}} ins(%[[BETA]], %[[B]] : tensor<16xf32>, tensor<16x4xf32>)
// LN-DAG: %[[BW:.*]] = linalg.generic {{.*}} ins(%[[B]], %[[W]] : tensor<16x4xf32>, tensor<16xf32>)
// LN: %[[C:.*]] = fusion.fused_matmul %[[X]], %[[BW]] col_bias(%[[CB]] : tensor<4xf32>) {prologue = #fusion.prologue<layer_norm>
// LN-NOT: fusion.layer_norm
// LN: return %[[C]]
func.func @layer_norm(%x: tensor<8x16xf32>, %b: tensor<16x4xf32>, %w: tensor<16xf32>, %beta: tensor<16xf32>) -> tensor<8x4xf32> {
  %n, %m, %r = fusion.layer_norm %x weight(%w : tensor<16xf32>) bias(%beta : tensor<16xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x16xf32> -> tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>
  %c = fusion.matmul %n, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}
