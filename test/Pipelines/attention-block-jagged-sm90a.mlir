// The Kunlun attention block with jagged q, as users write it (q [T, H, D]
// by offsets; both norms over the [T, H * D] rows): fusion-fuse forms one
// fusion.norm_attention with the offsets, which lowers to the window
// kernel and one FlashNormAttention kernel (a cluster of the heads); with
// more heads than a norm cluster takes the block stays as its ops (five
// kernels after the window kernel of its gdpa), and fusion-fuse says why.
// RUN: fusion-opt %s --fusion-fuse=report=true 2>&1 | FileCheck %s --check-prefix=FUSE
// RUN: fusion-opt %s --fusion-fuse --convert-fusion-to-gpu | FileCheck %s

// FUSE: remark: fusion.gdpa formed into fusion.norm_attention
// FUSE: remark: fusion.gdpa not formed into fusion.norm_attention: the sm_90a FlashNormAttention kernel cannot take it: expected a static head count from 1 to 4 (one CTA per head, the heads of a token in one cluster, whose norms exchange their row sums), but got 8; the block runs as its layer_norm, gdpa, add and rms_norm ops' kernels (fusion-plan-kernels folds the adds it can into them)
// FUSE-LABEL: func.func @jagged_block(
// FUSE: fusion.norm_attention %{{.*}}, %{{.*}}, %{{.*}} offsets(%{{.*}} : tensor<?xi32>) ln_weight
// FUSE-NOT: fusion.gdpa
// FUSE-LABEL: func.func @wide_jagged_block(
// FUSE-NOT: fusion.norm_attention
// FUSE: fusion.gdpa

// CHECK-LABEL: func.func @jagged_block(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_block_kernel0_windows
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_block_kernel0 clusters in
// CHECK-NOT: gpu.launch_func
// CHECK-LABEL: func.func @wide_jagged_block(
// CHECK-COUNT-6: gpu.launch_func async
// CHECK-NOT: gpu.launch_func

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @jagged_block(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>,
    %lnw: tensor<256xbf16>, %lnb: tensor<256xbf16>, %rmsw: tensor<256xbf16>) -> tensor<?x2x128xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x2x128xbf16>
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : tensor<256xbf16>) bias(%lnb : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>, tensor<?xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [%t, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<?xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>
  %h = fusion.add %a, %ln : tensor<?x2x128xbf16>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [%t, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %out = fusion.add %y, %q : tensor<?x2x128xbf16>
  return %out : tensor<?x2x128xbf16>
}

func.func @wide_jagged_block(%q: tensor<512x8x64xbf16>, %k: tensor<4x64x8x64xbf16>, %v: tensor<4x64x8x64xbf16>, %off: tensor<5xi64>) -> tensor<512x8x64xbf16> {
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : tensor<512x8x64xbf16> into tensor<512x512xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<512x512xbf16> -> tensor<512x512xbf16>, tensor<512xf32>, tensor<512xf32>
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [512, 8, 64] : tensor<512x512xbf16> into tensor<512x8x64xbf16>
  %a = fusion.gdpa %ln, %k, %v offsets(%off : tensor<5xi64>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<512x8x64xbf16>, tensor<4x64x8x64xbf16>, tensor<4x64x8x64xbf16> -> tensor<512x8x64xbf16>
  %h = fusion.add %a, %ln : tensor<512x8x64xbf16>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<512x8x64xbf16> into tensor<512x512xbf16>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<512x512xbf16> -> tensor<512x512xbf16>
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [512, 8, 64] : tensor<512x512xbf16> into tensor<512x8x64xbf16>
  %out = fusion.add %y, %q : tensor<512x8x64xbf16>
  return %out : tensor<512x8x64xbf16>
}
}
