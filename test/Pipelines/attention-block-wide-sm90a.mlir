// An attention block the FlashNormAttention kernel does not take (8 heads:
// more CTAs than a norm cluster has on sm_90a) is not formed for the GPU:
// fusion-fuse says why, and the block runs whole as its ops' kernels.
// RUN: fusion-opt %s --fusion-fuse=report=true 2>&1 | FileCheck %s --check-prefix=FUSE
// RUN: fusion-opt %s --fusion-fuse --convert-fusion-to-gpu | FileCheck %s

// FUSE: remark: fusion.gdpa not formed into fusion.norm_attention: the sm_90a FlashNormAttention kernel cannot take it: expected a static head count from 1 to 4 (one CTA per head, the heads of a token in one cluster, whose norms exchange their row sums), but got 8; the block runs as its layer_norm, gdpa, add and rms_norm ops' kernels (fusion-plan-kernels folds the adds it can into them)
// FUSE-NOT: fusion.norm_attention

// CHECK-LABEL: func.func @wide_block(
// CHECK-COUNT-5: gpu.launch_func async
// CHECK-NOT: gpu.launch_func

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wide_block(%q: tensor<4x256x8x64xbf16>, %k: tensor<4x64x8x64xbf16>, %v: tensor<4x64x8x64xbf16>) -> tensor<4x256x8x64xbf16> {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<4x256x8x64xbf16> into tensor<4x256x512xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : tensor<4x256x512xbf16> -> tensor<4x256x512xbf16>, tensor<4x256xf32>, tensor<4x256xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [4, 256, 8, 64] : tensor<4x256x512xbf16> into tensor<4x256x8x64xbf16>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<4x256x8x64xbf16>, tensor<4x64x8x64xbf16>, tensor<4x64x8x64xbf16> -> tensor<4x256x8x64xbf16>
  %h = fusion.add %a, %ln : tensor<4x256x8x64xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<4x256x8x64xbf16> into tensor<4x256x512xbf16>
  %yf = fusion.rms_norm %hf {epsilon = 1.0e-05 : f32} : tensor<4x256x512xbf16> -> tensor<4x256x512xbf16>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [4, 256, 8, 64] : tensor<4x256x512xbf16> into tensor<4x256x8x64xbf16>
  %out = fusion.add %y, %q : tensor<4x256x8x64xbf16>
  return %out : tensor<4x256x8x64xbf16>
}
}
