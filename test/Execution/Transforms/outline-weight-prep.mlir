// What a function computes from its weights alone moves into @<f>_prepare
// (fusion-outline-weight-prep, the last pass of fusion-fuse): Lazy
// Pre-Norm's weight fold diag(g) W, and LayerNorm's bias beta W. Each
// program runs on the CPU on the same random inputs before fusion-fuse and
// after it, the runner calling @<f>_prepare and then @f with what it returned.
// RUN: fusion-runner %s -e llama_pre_norm --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e pre_layer_norm_bias --after-passes='fusion-fuse{lazy-layer-norm=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e qwen3_attention_inputs --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e llama_pre_norm_bf16 --after-passes=fusion-fuse --atol=3e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-opt %s '-fusion-fuse=lazy-layer-norm=true' | FileCheck %s --check-prefix=IR
// CHECK: PASS

// IR-LABEL: func.func @llama_pre_norm_prepare(
// IR-SAME: %[[G:.*]]: tensor<64xf32>, %[[W:.*]]: tensor<96x64xf32>) -> tensor<96x64xf32>
// IR: %[[F:.*]] = fusion.mul %[[W]], %[[G]]
// IR: return %[[F]]
// IR-LABEL: func.func @llama_pre_norm(
// IR-SAME: %{{.*}}: tensor<32x64xf32>, %{{.*}}: tensor<64xf32> {fusion.weight}, %{{.*}}: tensor<96x64xf32> {fusion.weight}, %[[P:.*]]: tensor<96x64xf32> {fusion.prepared = 0 : i64})
// IR-SAME: attributes {fusion.prepare = @llama_pre_norm_prepare}
// IR-NOT: fusion.mul
// IR: fusion.fused_matmul %{{.*}}, %[[P]] {prologue = #fusion.prologue<rms_norm>
func.func @llama_pre_norm(%x: tensor<32x64xf32>, %g: tensor<64xf32> {fusion.weight},
                          %w: tensor<96x64xf32> {fusion.weight}) -> tensor<32x96xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<32x64xf32>, tensor<96x64xf32> -> tensor<32x96xf32>
  return %y : tensor<32x96xf32>
}

// LayerNorm with weight and bias before a linear with a bias: the weight
// fold and the bias product beta W (+ the linear's bias) are both prepared.
// IR-LABEL: func.func @pre_layer_norm_bias_prepare(
// IR-SAME: -> (tensor<96xf32>, tensor<96x64xf32>)
// IR-DAG: fusion.matmul
// IR-DAG: fusion.add
// IR-DAG: fusion.mul
// IR-LABEL: func.func @pre_layer_norm_bias(
// IR-SAME: %[[CB:[^:]*]]: tensor<96xf32> {fusion.prepared = 0 : i64}, %[[WG:[^:]*]]: tensor<96x64xf32> {fusion.prepared = 1 : i64})
// IR-NEXT: fusion.fused_matmul %{{.*}}, %[[WG]] col_bias(%[[CB]] : tensor<96xf32>) {prologue = #fusion.prologue<layer_norm>
// IR-NEXT: return
func.func @pre_layer_norm_bias(%x: tensor<32x64xf32>, %g: tensor<64xf32> {fusion.weight},
                               %beta: tensor<64xf32> {fusion.weight},
                               %w: tensor<96x64xf32> {fusion.weight},
                               %b: tensor<96xf32> {fusion.weight}) -> tensor<32x96xf32> {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w bias(%b : tensor<96xf32>) {transpose_rhs} : tensor<32x64xf32>, tensor<96x64xf32> -> tensor<32x96xf32>
  return %y : tensor<32x96xf32>
}

// Qwen3's attention inputs: the input RMSNorm's weight folded into q, k
// and v, three prepared values; the per-head norm weights stay arguments.
// IR-LABEL: func.func @qwen3_attention_inputs_prepare(
// IR-SAME: -> (tensor<128x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>)
// IR-LABEL: func.func @qwen3_attention_inputs(
// IR-SAME: {fusion.prepared = 2 : i64}
func.func @qwen3_attention_inputs(%x: tensor<32x128xf32>, %g: tensor<128xf32> {fusion.weight},
    %wq: tensor<128x128xf32> {fusion.weight}, %wk: tensor<64x128xf32> {fusion.weight},
    %wv: tensor<64x128xf32> {fusion.weight}, %qn: tensor<64xf32> {fusion.weight},
    %kn: tensor<64xf32> {fusion.weight})
    -> (tensor<32x2x64xf32>, tensor<32x1x64xf32>, tensor<32x64xf32>) {
  %n = fusion.rms_norm %x weight(%g : tensor<128xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x128xf32> -> tensor<32x128xf32>
  %q = fusion.matmul %n, %wq {transpose_rhs} : tensor<32x128xf32>, tensor<128x128xf32> -> tensor<32x128xf32>
  %k = fusion.matmul %n, %wk {transpose_rhs} : tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x64xf32>
  %v = fusion.matmul %n, %wv {transpose_rhs} : tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x64xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [32, 2, 64] : tensor<32x128xf32> into tensor<32x2x64xf32>
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [32, 1, 64] : tensor<32x64xf32> into tensor<32x1x64xf32>
  %qo = fusion.rms_norm %qh weight(%qn : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x2x64xf32> -> tensor<32x2x64xf32>
  %ko = fusion.rms_norm %kh weight(%kn : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x1x64xf32> -> tensor<32x1x64xf32>
  return %qo, %ko, %v : tensor<32x2x64xf32>, tensor<32x1x64xf32>, tensor<32x64xf32>
}

// In bf16, the same program as the first.
func.func @llama_pre_norm_bf16(%x: tensor<32x64xbf16>, %g: tensor<64xbf16> {fusion.weight},
                               %w: tensor<96x64xbf16> {fusion.weight}) -> tensor<32x96xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<32x64xbf16> -> tensor<32x64xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<32x64xbf16>, tensor<96x64xbf16> -> tensor<32x96xbf16>
  return %y : tensor<32x96xbf16>
}
