// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s
// RUN: fusion-opt %s -split-input-file '-fusion-plan-kernels=multicast=false' | FileCheck %s --check-prefix=OFF
// RUN: fusion-opt %s -split-input-file '-fusion-plan-kernels=multicast=true stream-k=true' | FileCheck %s --check-prefix=STREAMK

// Test the pair of CTAs along M (chooseClusterM; multicast, on by default):
// a plain GEMM of more tiles than SMs (65536 x 2048: 4096 tiles) gets
// cluster_m = 2; 256 x 2048 (64 tiles of 64 columns) does not; a dynamic M does, its
// small-M body (tiles of 64) not; a Lazy Pre-Norm GEMM and a norm
// epilogue one CTA holds do; a norm row over a cluster along N does not,
// nor a GEMM planned for stream-K (STREAMK), nor a weight gradient split
// over K; a weight gradient of more tiles than SMs (transpose_lhs, A loaded
// K-major) does, and so does an epilogue adding a residual and a column bias.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @multicast_choice
// OFF-LABEL: func.func @multicast_choice
// OFF-NOT: cluster_m
// STREAMK-LABEL: func.func @multicast_choice
// STREAMK-NOT: cluster_m
func.func @multicast_choice(%x: tensor<65536x2048xbf16>, %w: tensor<2048x2048xbf16>,
                            %xs: tensor<256x2048xbf16>,
                            %xd: tensor<?x512xbf16>, %wd: tensor<1024x512xbf16>)
    -> (tensor<65536x2048xbf16>, tensor<256x2048xbf16>, tensor<?x1024xbf16>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: smem_bytes = 230912, cluster_m = 2>
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<65536x2048xbf16>, tensor<2048x2048xbf16> -> tensor<65536x2048xbf16>
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: smem_bytes = 230912>
  %y2 = fusion.matmul %xs, %w {transpose_rhs} : tensor<256x2048xbf16>, tensor<2048x2048xbf16> -> tensor<256x2048xbf16>
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, {{.*}}, cluster_m = 2>
  // CHECK-SAME: fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, {{.*}}, smem_bytes = 230912>
  %y3 = fusion.matmul %xd, %wd {transpose_rhs} : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  return %y, %y2, %y3 : tensor<65536x2048xbf16>, tensor<256x2048xbf16>, tensor<?x1024xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @multicast_prologue_and_one_cta_norm
// STREAMK-LABEL: func.func @multicast_prologue_and_one_cta_norm
func.func @multicast_prologue_and_one_cta_norm(%a: tensor<65536x512xbf16>, %b: tensor<512x256xbf16>,
                                               %g: tensor<256xbf16>) -> tensor<65536x256xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: cluster_n = 1, {{.*}}, cluster_m = 2>
  %y = fusion.fused_matmul %a, %b norm_weight(%g : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<65536x512xbf16>, tensor<512x256xbf16> -> tensor<65536x256xbf16>
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: cluster_m = 2>
  %z = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<65536x512xbf16>, tensor<512x256xbf16> -> tensor<65536x256xbf16>
  %s = fusion.add %y, %z : tensor<65536x256xbf16>
  return %s : tensor<65536x256xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @no_multicast_beside_a_cluster_or_split_k
// CHECK-NOT: cluster_m
func.func @no_multicast_beside_a_cluster_or_split_k(%a: tensor<65536x512xbf16>, %b: tensor<512x1024xbf16>,
                                                    %g: tensor<1024xbf16>, %dy: tensor<65536x1024xbf16>)
    -> (tensor<65536x1024xbf16>, tensor<1024x512xbf16>) {
  %y = fusion.fused_matmul %a, %b norm_weight(%g : tensor<1024xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<65536x512xbf16>, tensor<512x1024xbf16> -> tensor<65536x1024xbf16>
  %dw = fusion.matmul %dy, %a {transpose_lhs} : tensor<65536x1024xbf16>, tensor<65536x512xbf16> -> tensor<1024x512xbf16>
  return %y, %dw : tensor<65536x1024xbf16>, tensor<1024x512xbf16>
}
}

// -----

// A weight gradient of 4096 x 4096 over 65536 tokens: 512 tiles, not split
// over K, so a pair; the pairs share B's (x's) boxes, each CTA loading its
// own transposed A (dy^T) rows.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @multicast_weight_gradient
// OFF-LABEL: func.func @multicast_weight_gradient
// OFF-NOT: cluster_m
func.func @multicast_weight_gradient(%dy: tensor<65536x4096xbf16>, %x: tensor<65536x4096xbf16>)
    -> tensor<4096x4096xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: cluster_m = 2>
  // CHECK-SAME: transpose_lhs
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<65536x4096xbf16>, tensor<65536x4096xbf16> -> tensor<4096x4096xbf16>
  return %dw : tensor<4096x4096xbf16>
}
}

// -----

// A linear layer with a bias and the residual stream (GPT-2's c_proj):
// col_bias is added at its use in the chunked epilogue, so the pair holds
// no more registers than one CTA (ptxas-residual-sm90a.mlir: 0 spills).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @multicast_residual_col_bias
// OFF-LABEL: func.func @multicast_residual_col_bias
// OFF-NOT: cluster_m
func.func @multicast_residual_col_bias(%a: tensor<65536x512xbf16>, %b: tensor<512x1024xbf16>,
                                       %r: tensor<65536x1024xbf16>, %cb: tensor<1024xbf16>)
    -> tensor<65536x1024xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: cluster_m = 2>
  %h = fusion.fused_matmul %a, %b residual(%r : tensor<65536x1024xbf16>) col_bias(%cb : tensor<1024xbf16>)
      : tensor<65536x512xbf16>, tensor<512x1024xbf16> -> tensor<65536x1024xbf16>
  return %h : tensor<65536x1024xbf16>
}
}

// -----

// sm_100a accumulates in tensor memory: no pair along M there.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @no_multicast_on_sm100a
// CHECK-NOT: cluster_m
func.func @no_multicast_on_sm100a(%x: tensor<65536x2048xbf16>, %w: tensor<2048x2048xbf16>) -> tensor<65536x2048xbf16> {
  %y = fusion.matmul %x, %w : tensor<65536x2048xbf16>, tensor<2048x2048xbf16> -> tensor<65536x2048xbf16>
  return %y : tensor<65536x2048xbf16>
}
}
