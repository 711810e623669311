// A per-head norm (Qwen3's and Gemma 3's q_norm / k_norm: the projection's
// columns unfolded into heads, each head normalized with one weight of the
// head's size) is fused into the GEMM's epilogue over column groups
// (norm_group_size): each function runs on the CPU on the same random inputs
// before and after the pass. f32 checks the rewrite; the bf16 forms differ
// by the norm reading the f32 accumulator instead of the GEMM's output
// rounded to bf16 (about one bf16 ulp of the normalized values).
// RUN: fusion-runner %s -e qwen3_q_norm --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e heads_layer_norm --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e heads_saved_for_backward --after-passes=fusion-epilogue-norm --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e heads_linear_bias --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e qwen3_q_norm_bf16 --after-passes=fusion-fuse --atol=3e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e qwen3_attention_inputs --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e qwen3_attention_inputs_bf16 --after-passes=fusion-fuse --atol=3e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-opt %s -fusion-epilogue-norm | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s -fusion-fuse | FileCheck %s --check-prefix=FUSE
// CHECK: PASS
// The decoder layer's input RMSNorm rides in all three projections as a Lazy
// Pre-Norm prologue, q and k keeping their per-head norm epilogues.
// FUSE-LABEL: func.func @qwen3_attention_inputs(
// FUSE-NOT: fusion.rms_norm %
// FUSE-DAG: norm_weight(%arg5 : tensor<64xf32>) {epilogue = #fusion.epilogue<rms_norm>, {{.*}}, norm_group_size = 64 : i64, prologue = #fusion.prologue<rms_norm>
// FUSE-DAG: norm_weight(%arg6 : tensor<64xf32>) {epilogue = #fusion.epilogue<rms_norm>, {{.*}}, norm_group_size = 64 : i64, prologue = #fusion.prologue<rms_norm>
// FUSE-DAG: {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = {{.*}}, transpose_rhs} : tensor<32x128xf32>, tensor<128x128xf32> -> tensor<32x128xf32>
// FUSE-NOT: fusion.rms_norm %
// FUSE: return
// IR-LABEL: func.func @qwen3_q_norm(
// IR: %[[Y:.*]], %[[R:.*]] = fusion.fused_matmul %{{.*}}, %{{.*}} norm_weight(%{{.*}} : tensor<128xf32>)
// IR-SAME: norm_group_size = 128 : i64
// IR-SAME: -> tensor<32x256xf32>, tensor<32x2xf32>
// IR: %[[E:.*]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1, 2]] output_shape [32, 2, 128]
// IR: return %[[E]], %[[R]]
// IR-LABEL: func.func @heads_layer_norm(
// IR: fusion.fused_matmul {{.*}} norm_weight(%{{.*}} : tensor<64xf32>) norm_bias(%{{.*}} : tensor<64xf32>)
// IR-SAME: norm_group_size = 64 : i64
// IR-SAME: -> tensor<32x256xf32>, tensor<32x4xf32>, tensor<32x4xf32>
// IR-NOT: fusion.layer_norm %
// IR-LABEL: func.func @heads_saved_for_backward(
// IR: %[[Y:.*]], %[[H:.*]], %[[R:.*]] = fusion.fused_matmul
// IR-SAME: save_norm_input
// IR: %[[HV:.*]] = tensor.expand_shape %[[H]]
// IR: fusion.rms_norm_grad %{{.*}}, %[[HV]], %[[R]]

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// q_proj then q_norm over 2 heads of 128 (Qwen3's RMSNorm, eps 1e-6).
func.func @qwen3_q_norm(%x: tensor<32x64xf32>, %w: tensor<256x64xf32>, %g: tensor<128xf32>)
    -> (tensor<32x2x128xf32>, tensor<32x2xf32>) {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [32, 2, 128] : tensor<32x256xf32> into tensor<32x2x128xf32>
  %y, %r = fusion.rms_norm %e weight(%g : tensor<128xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x2x128xf32> -> tensor<32x2x128xf32>, tensor<32x2xf32>
  return %y, %r : tensor<32x2x128xf32>, tensor<32x2xf32>
}

// A LayerNorm with weight and bias over 4 heads of 64.
func.func @heads_layer_norm(%x: tensor<32x64xf32>, %w: tensor<64x256xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<32x4x64xf32>, tensor<32x4xf32>, tensor<32x4xf32>) {
  %q = fusion.matmul %x, %w : tensor<32x64xf32>, tensor<64x256xf32> -> tensor<32x256xf32>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [32, 4, 64] : tensor<32x256xf32> into tensor<32x4x64xf32>
  %y, %m, %r = fusion.layer_norm %e weight(%g : tensor<64xf32>) bias(%b : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<32x4x64xf32> -> tensor<32x4x64xf32>, tensor<32x4xf32>, tensor<32x4xf32>
  return %y, %m, %r : tensor<32x4x64xf32>, tensor<32x4xf32>, tensor<32x4xf32>
}

// A training step's forward and the norm's backward: the backward reads the
// heads view of the projection, which the fused op stores beside its output.
func.func @heads_saved_for_backward(%x: tensor<32x64xf32>, %w: tensor<384x64xf32>, %g: tensor<128xf32>, %dy: tensor<32x3x128xf32>)
    -> (tensor<32x3x128xf32>, tensor<32x3x128xf32>, tensor<128xf32>) {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<384x64xf32> -> tensor<32x384xf32>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [32, 3, 128] : tensor<32x384xf32> into tensor<32x3x128xf32>
  %y, %r = fusion.rms_norm %e weight(%g : tensor<128xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x3x128xf32> -> tensor<32x3x128xf32>, tensor<32x3xf32>
  %dh, %dg = fusion.rms_norm_grad %dy, %e, %r weight(%g : tensor<128xf32>) : tensor<32x3x128xf32>, tensor<32x3x128xf32>, tensor<32x3xf32> -> tensor<32x3x128xf32>, tensor<128xf32>
  return %y, %dh, %dg : tensor<32x3x128xf32>, tensor<32x3x128xf32>, tensor<128xf32>
}

// nn.Linear with a bias, then a per-head RMSNorm without weight, through
// the whole fusion-fuse pipeline.
func.func @heads_linear_bias(%x: tensor<32x64xf32>, %w: tensor<512x64xf32>, %bias: tensor<512xf32>)
    -> tensor<32x4x128xf32> {
  %q = fusion.matmul %x, %w bias(%bias : tensor<512xf32>) {transpose_rhs} : tensor<32x64xf32>, tensor<512x64xf32> -> tensor<32x512xf32>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [32, 4, 128] : tensor<32x512xf32> into tensor<32x4x128xf32>
  %y = fusion.rms_norm %e {epsilon = 1.0e-06 : f32} : tensor<32x4x128xf32> -> tensor<32x4x128xf32>
  return %y : tensor<32x4x128xf32>
}

// bf16 as a model holds it, through fusion-fuse.
func.func @qwen3_q_norm_bf16(%x: tensor<48x128xbf16>, %w: tensor<512x128xbf16>, %g: tensor<128xbf16>)
    -> tensor<48x4x128xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<48x128xbf16>, tensor<512x128xbf16> -> tensor<48x512xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [48, 4, 128] : tensor<48x512xbf16> into tensor<48x4x128xbf16>
  %y = fusion.rms_norm %e weight(%g : tensor<128xbf16>) {epsilon = 1.0e-06 : f32} : tensor<48x4x128xbf16> -> tensor<48x4x128xbf16>
  return %y : tensor<48x4x128xbf16>
}

// A Qwen3 decoder layer's attention inputs: the input RMSNorm (weight), then
// q_proj, k_proj (fewer heads: grouped-query attention) and v_proj, q and k
// with their per-head RMSNorm (heads of 64 here).
func.func @qwen3_attention_inputs(%x: tensor<32x128xf32>, %gin: tensor<128xf32>,
    %wq: tensor<256x128xf32>, %wk: tensor<128x128xf32>, %wv: tensor<128x128xf32>,
    %gq: tensor<64xf32>, %gk: tensor<64xf32>)
    -> (tensor<32x4x64xf32>, tensor<32x2x64xf32>, tensor<32x128xf32>) {
  %h = fusion.rms_norm %x weight(%gin : tensor<128xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x128xf32> -> tensor<32x128xf32>
  %q = fusion.matmul %h, %wq {transpose_rhs} : tensor<32x128xf32>, tensor<256x128xf32> -> tensor<32x256xf32>
  %k = fusion.matmul %h, %wk {transpose_rhs} : tensor<32x128xf32>, tensor<128x128xf32> -> tensor<32x128xf32>
  %v = fusion.matmul %h, %wv {transpose_rhs} : tensor<32x128xf32>, tensor<128x128xf32> -> tensor<32x128xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [32, 4, 64] : tensor<32x256xf32> into tensor<32x4x64xf32>
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [32, 2, 64] : tensor<32x128xf32> into tensor<32x2x64xf32>
  %qn = fusion.rms_norm %qh weight(%gq : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x4x64xf32> -> tensor<32x4x64xf32>
  %kn = fusion.rms_norm %kh weight(%gk : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x2x64xf32> -> tensor<32x2x64xf32>
  return %qn, %kn, %v : tensor<32x4x64xf32>, tensor<32x2x64xf32>, tensor<32x128xf32>
}

func.func @qwen3_attention_inputs_bf16(%x: tensor<48x128xbf16>, %gin: tensor<128xbf16>,
    %wq: tensor<256x128xbf16>, %wk: tensor<128x128xbf16>, %gq: tensor<64xbf16>, %gk: tensor<64xbf16>)
    -> (tensor<48x4x64xbf16>, tensor<48x2x64xbf16>) {
  %h = fusion.rms_norm %x weight(%gin : tensor<128xbf16>) {epsilon = 1.0e-06 : f32} : tensor<48x128xbf16> -> tensor<48x128xbf16>
  %q = fusion.matmul %h, %wq {transpose_rhs} : tensor<48x128xbf16>, tensor<256x128xbf16> -> tensor<48x256xbf16>
  %k = fusion.matmul %h, %wk {transpose_rhs} : tensor<48x128xbf16>, tensor<128x128xbf16> -> tensor<48x128xbf16>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [48, 4, 64] : tensor<48x256xbf16> into tensor<48x4x64xbf16>
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [48, 2, 64] : tensor<48x128xbf16> into tensor<48x2x64xbf16>
  %qn = fusion.rms_norm %qh weight(%gq : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<48x4x64xbf16> -> tensor<48x4x64xbf16>
  %kn = fusion.rms_norm %kh weight(%gk : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<48x2x64xbf16> -> tensor<48x2x64xbf16>
  return %qn, %kn : tensor<48x4x64xbf16>, tensor<48x2x64xbf16>
}
}
