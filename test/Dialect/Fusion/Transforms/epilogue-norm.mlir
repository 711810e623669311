// RUN: fusion-opt %s -split-input-file -fusion-epilogue-norm | FileCheck %s

// A matmul + residual add + RMSNorm becomes one fused_matmul; the used rstd
// becomes an extra result (save_stats).
// CHECK-LABEL: func.func @rms_residual
// CHECK-SAME: (%[[A:.*]]: tensor<64x128xbf16>, %[[B:.*]]: tensor<128x1024xbf16>, %[[R:.*]]: tensor<64x1024xbf16>)
// CHECK: %[[Y:.*]], %[[S:.*]] = fusion.fused_matmul %[[A]], %[[B]] residual(%[[R]] : tensor<64x1024xbf16>)
// CHECK-SAME: epilogue = #fusion.epilogue<rms_norm>, epsilon = 9.99999974E-6 : f32, save_stats
// CHECK-NOT: fusion.matmul
// CHECK-NOT: fusion.add
// CHECK-NOT: fusion.rms_norm
// CHECK: return %[[Y]], %[[S]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_residual(%a: tensor<64x128xbf16>, %b: tensor<128x1024xbf16>, %r: tensor<64x1024xbf16>) -> (tensor<64x1024xbf16>, tensor<64xf32>) {
  %c = fusion.matmul %a, %b : tensor<64x128xbf16>, tensor<128x1024xbf16> -> tensor<64x1024xbf16>
  %s = fusion.add %r, %c : tensor<64x1024xbf16>
  %y, %rstd = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>, tensor<64xf32>
  return %y, %rstd : tensor<64x1024xbf16>, tensor<64xf32>
}
}

// -----

// LayerNorm with weight and bias, unused statistics (no save_stats), transpose_rhs kept.
// CHECK-LABEL: func.func @layer_norm_affine
// CHECK-SAME: (%[[A:.*]]: tensor<64x128xf32>, %[[B:.*]]: tensor<256x128xf32>, %[[W:.*]]: tensor<256xf32>, %[[BIAS:.*]]: tensor<256xf32>)
// CHECK: %[[Y:.*]] = fusion.fused_matmul %[[A]], %[[B]] norm_weight(%[[W]] : tensor<256xf32>) norm_bias(%[[BIAS]] : tensor<256xf32>)
// CHECK-SAME: epilogue = #fusion.epilogue<layer_norm>
// CHECK-NOT: save_stats
// CHECK-SAME: transpose_rhs
// CHECK: return %[[Y]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @layer_norm_affine(%a: tensor<64x128xf32>, %b: tensor<256x128xf32>, %w: tensor<256xf32>, %bias: tensor<256xf32>) -> tensor<64x256xf32> {
  %c = fusion.matmul %a, %b {transpose_rhs} : tensor<64x128xf32>, tensor<256x128xf32> -> tensor<64x256xf32>
  %y, %m, %r = fusion.layer_norm %c weight(%w : tensor<256xf32>) bias(%bias : tensor<256xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<64x256xf32> -> tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>
  return %y : tensor<64x256xf32>
}
}

// -----

// Not applied without a target: the row limits depend on it.
// CHECK-LABEL: func.func @no_target
// CHECK: fusion.matmul
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.fused_matmul
func.func @no_target(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>) -> tensor<64x256xf32> {
  %c = fusion.matmul %a, %b : tensor<64x128xf32>, tensor<128x256xf32> -> tensor<64x256xf32>
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// -----

// The GEMM result is also returned: fused anyway, the fused op storing it
// too (save_norm_input), and the function returns that result.
// CHECK-LABEL: func.func @gemm_result_used
// CHECK: %[[Y:.*]], %[[H:.*]] = fusion.fused_matmul
// CHECK-SAME: save_norm_input
// CHECK-NOT: fusion.matmul
// CHECK-NOT: fusion.rms_norm
// CHECK: return %[[Y]], %[[H]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @gemm_result_used(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<64x128xf32>, tensor<128x256xf32> -> tensor<64x256xf32>
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y, %c : tensor<64x256xf32>, tensor<64x256xf32>
}
}

// -----

// Not applied: a row of 8192 columns needs 32 CTAs on sm_90a.
// CHECK-LABEL: func.func @too_wide
// CHECK: fusion.matmul
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.fused_matmul
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @too_wide(%a: tensor<64x128xbf16>, %b: tensor<128x8192xbf16>) -> tensor<64x8192xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x128xbf16>, tensor<128x8192xbf16> -> tensor<64x8192xbf16>
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x8192xbf16> -> tensor<64x8192xbf16>
  return %y : tensor<64x8192xbf16>
}
}

// -----

// Not applied: the norm's input comes from no GEMM.
// CHECK-LABEL: func.func @no_gemm
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.fused_matmul
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @no_gemm(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
}

// -----

// The BERT post-norm: a linear with bias (weight [N, K], dynamic M), a
// residual and a LayerNorm with weight and bias; the linear's bias becomes
// col_bias.
// CHECK-LABEL: func.func @bert_post_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x128xbf16>, %[[W:.*]]: tensor<256x128xbf16>, %[[B:.*]]: tensor<256xbf16>, %[[R:.*]]: tensor<?x256xbf16>, %[[G:.*]]: tensor<256xbf16>, %[[BETA:.*]]: tensor<256xbf16>)
// CHECK: %[[Y:.*]] = fusion.fused_matmul %[[X]], %[[W]] residual(%[[R]] : tensor<?x256xbf16>) col_bias(%[[B]] : tensor<256xbf16>) norm_weight(%[[G]] : tensor<256xbf16>) norm_bias(%[[BETA]] : tensor<256xbf16>)
// CHECK-SAME: epilogue = #fusion.epilogue<layer_norm>
// CHECK-SAME: transpose_rhs
// CHECK-NOT: fusion.matmul
// CHECK-NOT: fusion.add
// CHECK: return %[[Y]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @bert_post_norm(%x: tensor<?x128xbf16>, %w: tensor<256x128xbf16>, %b: tensor<256xbf16>, %r: tensor<?x256xbf16>,
                          %g: tensor<256xbf16>, %beta: tensor<256xbf16>) -> tensor<?x256xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<256xbf16>) {transpose_rhs} : tensor<?x128xbf16>, tensor<256x128xbf16> -> tensor<?x256xbf16>
  %s = fusion.add %h, %r : tensor<?x256xbf16>
  %y, %m, %rs = fusion.layer_norm %s weight(%g : tensor<256xbf16>) bias(%beta : tensor<256xbf16>) {epsilon = 1.0e-12 : f32}
      : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x256xbf16>
}
}

// -----

// Not applied by this pass alone: a broadcasting add of a bias vector is not a
// residual (fusion-raise-linalg first folds it into the matmul).
// CHECK-LABEL: func.func @bias_add_not_residual
// CHECK: fusion.matmul
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<256xf32>
// CHECK: fusion.rms_norm
// CHECK-NOT: fusion.fused_matmul
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @bias_add_not_residual(%a: tensor<64x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<64x256xf32> {
  %h = fusion.matmul %a, %w : tensor<64x128xf32>, tensor<128x256xf32> -> tensor<64x256xf32>
  %s = fusion.add %h, %b : tensor<64x256xf32>, tensor<256xf32>
  %y = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
}
