// Real layers as users write them (nn.Linear with its [out, in] weight and
// its bias, pre- and post-norm blocks, unfused ops only) keep their values
// through fusion-fuse: each function runs on the CPU on the same random inputs
// before and after the pipeline.
// RUN: fusion-runner %s -e llama_prenorm --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e llama_prenorm_bf16 --after-passes=fusion-fuse --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e llama_prenorm_mulweight_bf16 --after-passes=fusion-fuse --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e bert_postnorm --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e bert_postnorm_bf16 --after-passes=fusion-fuse --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e bert_postnorm_bias_add --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e bert_postnorm_bias_add_bf16 --after-passes=fusion-fuse --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e bert_postnorm_broadcast --after-passes=fusion-fuse --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_prenorm_linear_bias --after-passes='fusion-fuse{lazy-layer-norm=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_prenorm_linear_bias_bf16 --after-passes='fusion-fuse{lazy-layer-norm=true}' --atol=5e-2 --rtol=5e-2 | FileCheck %s
// RUN: fusion-runner %s -e train_step_bias --after-passes='fusion-fuse{regroup-backward=true}' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// What fusion-fuse made of them: no unfused norm, add or layer matmul is left,
// and every bias went into a col_bias.
// RUN: fusion-opt %s -fusion-fuse | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s '-fusion-fuse=lazy-layer-norm=true' | FileCheck %s --check-prefix=LN
// RUN: fusion-opt %s '-fusion-fuse=regroup-backward=true' | FileCheck %s --check-prefix=REGROUP
// CHECK: PASS

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Llama: RMSNorm with a weight, then a bias-free linear (weight [out, in]).
// IR-LABEL: func.func @llama_prenorm(
// IR-SAME: %[[X:[^:]*]]: tensor<32x64xf32>, %[[G:[^:]*]]: tensor<64xf32>, %[[W:[^:]*]]: tensor<128x64xf32>
// IR: %[[WG:.*]] = fusion.mul %[[W]], %[[G]] : tensor<128x64xf32>, tensor<64xf32>
// IR: %[[Y:.*]] = fusion.fused_matmul %[[X]], %[[WG]] {prologue = #fusion.prologue<rms_norm>, {{.*}}transpose_rhs}
// IR-NOT: fusion.rms_norm
// IR-NOT: fusion.matmul
// IR: return %[[Y]]
func.func @llama_prenorm(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %w: tensor<128x64xf32>) -> tensor<32x128xf32> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xf32>) {epsilon = 1.0e-06 : f32} : tensor<32x64xf32> -> tensor<32x64xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}

// IR-LABEL: func.func @llama_prenorm_bf16(
// IR: fusion.mul %{{.*}}, %{{.*}} : tensor<128x64xbf16>, tensor<64xbf16>
// IR: fusion.fused_matmul {{.*}}prologue = #fusion.prologue<rms_norm>
// IR-NOT: fusion.rms_norm
// IR-NOT: fusion.matmul
// IR: return
func.func @llama_prenorm_bf16(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16>) -> tensor<32x128xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<64xbf16>) {epsilon = 1.0e-06 : f32} : tensor<32x64xbf16> -> tensor<32x64xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<32x64xbf16>, tensor<128x64xbf16> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}

// HF LlamaRMSNorm: `weight * rms_norm(x)` as a separate fusion.mul; the
// raise step makes it the norm's weight, then Lazy Pre-Norm folds it into W.
// IR-LABEL: func.func @llama_prenorm_mulweight_bf16(
// IR-SAME: %[[X:[^:]*]]: tensor<32x64xbf16>, %[[G:[^:]*]]: tensor<64xbf16>, %[[W:[^:]*]]: tensor<128x64xbf16>
// IR: %[[WG:.*]] = fusion.mul %[[W]], %[[G]] : tensor<128x64xbf16>, tensor<64xbf16>
// IR: fusion.fused_matmul %[[X]], %[[WG]] {prologue = #fusion.prologue<rms_norm>
// IR-NOT: fusion.rms_norm
// IR-NOT: fusion.matmul
// IR: return
func.func @llama_prenorm_mulweight_bf16(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16>) -> tensor<32x128xbf16> {
  %n0 = fusion.rms_norm %x {epsilon = 1.0e-06 : f32} : tensor<32x64xbf16> -> tensor<32x64xbf16>
  %n = fusion.mul %n0, %g : tensor<32x64xbf16>, tensor<64xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<32x64xbf16>, tensor<128x64xbf16> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}

// BERT post-norm: linear with bias, + residual, LayerNorm with weight and
// bias: one fused GEMM, the linear's bias as col_bias.
// IR-LABEL: func.func @bert_postnorm(
// IR-SAME: %[[X:[^:]*]]: tensor<32x128xf32>, %[[W:[^:]*]]: tensor<64x128xf32>, %[[B:[^:]*]]: tensor<64xf32>, %[[R:[^:]*]]: tensor<32x64xf32>, %[[G:[^:]*]]: tensor<64xf32>, %[[BETA:[^:]*]]: tensor<64xf32>
// IR: %[[Y:.*]] = fusion.fused_matmul %[[X]], %[[W]] residual(%[[R]] : tensor<32x64xf32>) col_bias(%[[B]] : tensor<64xf32>) norm_weight(%[[G]] : tensor<64xf32>) norm_bias(%[[BETA]] : tensor<64xf32>)
// IR-SAME: epilogue = #fusion.epilogue<layer_norm>
// IR-SAME: transpose_rhs
// IR-NOT: fusion.matmul
// IR-NOT: fusion.add
// IR-NOT: fusion.layer_norm
// IR: return %[[Y]]
func.func @bert_postnorm(%x: tensor<32x128xf32>, %w: tensor<64x128xf32>, %b: tensor<64xf32>, %res: tensor<32x64xf32>,
                         %g: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<32x64xf32> {
  %h = fusion.matmul %x, %w bias(%b : tensor<64xf32>) {transpose_rhs} : tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x64xf32>
  %s = fusion.add %h, %res : tensor<32x64xf32>
  %y, %m, %r = fusion.layer_norm %s weight(%g : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-12 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xf32>
}

// IR-LABEL: func.func @bert_postnorm_bf16(
// IR: fusion.fused_matmul {{.*}} residual({{.*}}) col_bias(%{{.*}} : tensor<64xbf16>) norm_weight({{.*}}) norm_bias({{.*}})
// IR-NOT: fusion.matmul
// IR-NOT: fusion.add
// IR: return
func.func @bert_postnorm_bf16(%x: tensor<32x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %res: tensor<32x64xbf16>,
                              %g: tensor<64xbf16>, %beta: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<64xbf16>) {transpose_rhs} : tensor<32x128xbf16>, tensor<64x128xbf16> -> tensor<32x64xbf16>
  %s = fusion.add %h, %res : tensor<32x64xbf16>
  %y, %m, %r = fusion.layer_norm %s weight(%g : tensor<64xbf16>) bias(%beta : tensor<64xbf16>) {epsilon = 1.0e-12 : f32}
      : tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xbf16>
}

// The same with the bias written as a separate broadcasting add.
// IR-LABEL: func.func @bert_postnorm_bias_add(
// IR-SAME: %[[X:[^:]*]]: tensor<32x128xf32>, %[[W:[^:]*]]: tensor<64x128xf32>, %[[B:[^:]*]]: tensor<64xf32>, %[[R:[^:]*]]: tensor<32x64xf32>
// IR: fusion.fused_matmul %[[X]], %[[W]] residual(%[[R]] : tensor<32x64xf32>) col_bias(%[[B]] : tensor<64xf32>)
// IR-SAME: epilogue = #fusion.epilogue<layer_norm>
// IR-NOT: fusion.matmul
// IR-NOT: fusion.add
// IR: return
func.func @bert_postnorm_bias_add(%x: tensor<32x128xf32>, %w: tensor<64x128xf32>, %b: tensor<64xf32>, %res: tensor<32x64xf32>,
                                  %g: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<32x64xf32> {
  %h0 = fusion.matmul %x, %w {transpose_rhs} : tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x64xf32>
  %h = fusion.add %h0, %b : tensor<32x64xf32>, tensor<64xf32>
  %s = fusion.add %h, %res : tensor<32x64xf32>
  %y, %m, %r = fusion.layer_norm %s weight(%g : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-12 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xf32>
}

// bf16, the residual first in the sum: the unfused form rounds x W^T to bf16
// before adding the bias, the fused one adds it to the f32 accumulator.
// IR-LABEL: func.func @bert_postnorm_bias_add_bf16(
// IR: fusion.fused_matmul {{.*}} residual({{.*}}) col_bias(%{{.*}} : tensor<64xbf16>)
// IR-NOT: fusion.matmul
// IR-NOT: fusion.add
// IR: return
func.func @bert_postnorm_bias_add_bf16(%x: tensor<32x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %res: tensor<32x64xbf16>,
                                       %g: tensor<64xbf16>, %beta: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %h0 = fusion.matmul %x, %w {transpose_rhs} : tensor<32x128xbf16>, tensor<64x128xbf16> -> tensor<32x64xbf16>
  %h = fusion.add %h0, %b : tensor<32x64xbf16>, tensor<64xbf16>
  %s = fusion.add %res, %h : tensor<32x64xbf16>
  %y, %m, %r = fusion.layer_norm %s weight(%g : tensor<64xbf16>) bias(%beta : tensor<64xbf16>) {epsilon = 1.0e-12 : f32}
      : tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xbf16>
}

// The same with the bias broadcast explicitly to [M, N] (linalg.broadcast).
// IR-LABEL: func.func @bert_postnorm_broadcast(
// IR-SAME: %[[X:[^:]*]]: tensor<32x128xf32>, %[[W:[^:]*]]: tensor<64x128xf32>, %[[B:[^:]*]]: tensor<64xf32>, %[[R:[^:]*]]: tensor<32x64xf32>
// IR: fusion.fused_matmul %[[X]], %[[W]] residual(%[[R]] : tensor<32x64xf32>) col_bias(%[[B]] : tensor<64xf32>)
// IR-NOT: linalg.broadcast
// IR-NOT: fusion.matmul
// IR-NOT: fusion.add
// IR: return
func.func @bert_postnorm_broadcast(%x: tensor<32x128xf32>, %w: tensor<64x128xf32>, %b: tensor<64xf32>, %res: tensor<32x64xf32>,
                                   %g: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<32x64xf32> {
  %h0 = fusion.matmul %x, %w {transpose_rhs} : tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x64xf32>
  %e = tensor.empty() : tensor<32x64xf32>
  %bb = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<32x64xf32>) dimensions = [0]
  %h = fusion.add %h0, %bb : tensor<32x64xf32>
  %s = fusion.add %h, %res : tensor<32x64xf32>
  %y, %m, %r = fusion.layer_norm %s weight(%g : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-12 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<32x64xf32>
}

// A LayerNorm pre-norm with weight and bias before a linear with bias
// (lazy-layer-norm=true): the weight folded into W by a fusion.mul, the
// column bias beta W^T (a 1-row GEMM) plus the linear's bias. Without the
// option the LayerNorm stays, and so does its matmul (with its bias).
// LN-LABEL: func.func @ln_prenorm_linear_bias(
// LN-SAME: %[[X:[^:]*]]: tensor<32x64xf32>, %[[G:[^:]*]]: tensor<64xf32>, %[[BETA:[^:]*]]: tensor<64xf32>, %[[W:[^:]*]]: tensor<128x64xf32>, %[[B:[^:]*]]: tensor<128xf32>
// LN-DAG: %[[ROW:.*]] = tensor.expand_shape %[[BETA]] {{\[\[}}0, 1]] output_shape [1, 64] : tensor<64xf32> into tensor<1x64xf32>
// LN-DAG: %[[BB:.*]] = fusion.matmul %[[ROW]], %[[W]] {transpose_rhs} : tensor<1x64xf32>, tensor<128x64xf32> -> tensor<1x128xf32>
// LN-DAG: %[[BBV:.*]] = tensor.collapse_shape %[[BB]] {{\[\[}}0, 1]] : tensor<1x128xf32> into tensor<128xf32>
// LN-DAG: %[[CB:.*]] = fusion.add %[[BBV]], %[[B]] : tensor<128xf32>
// LN-DAG: %[[WG:.*]] = fusion.mul %[[W]], %[[G]] : tensor<128x64xf32>, tensor<64xf32>
// LN: %[[Y:.*]] = fusion.fused_matmul %[[X]], %[[WG]] col_bias(%[[CB]] : tensor<128xf32>) {prologue = #fusion.prologue<layer_norm>
// LN-NOT: fusion.layer_norm
// LN: return %[[Y]]
// IR-LABEL: func.func @ln_prenorm_linear_bias(
// IR: fusion.layer_norm
// IR: fusion.matmul %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<128xf32>) {transpose_rhs}
func.func @ln_prenorm_linear_bias(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %beta: tensor<64xf32>,
                                  %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> tensor<32x128xf32> {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xf32>) bias(%beta : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w bias(%b : tensor<128xf32>) {transpose_rhs} : tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}

// LN-LABEL: func.func @ln_prenorm_linear_bias_bf16(
// LN: fusion.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<1x64xbf16>, tensor<128x64xbf16> -> tensor<1x128xf32>
// LN: fusion.fused_matmul {{.*}}col_bias(%{{.*}} : tensor<128xf32>) {prologue = #fusion.prologue<layer_norm>
// LN-NOT: fusion.layer_norm
// LN: return
func.func @ln_prenorm_linear_bias_bf16(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>,
                                       %w: tensor<128x64xbf16>, %b: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %n, %m, %r = fusion.layer_norm %x weight(%g : tensor<64xbf16>) bias(%beta : tensor<64xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %w bias(%b : tensor<128xbf16>) {transpose_rhs} : tensor<32x64xbf16>, tensor<128x64xbf16> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}

// Linear with bias -> RMSNorm -> linear, forward and backward: regrouping
// (fusion-fuse{regroup-backward=true}) keeps the first linear's bias as the
// forward fused op's col_bias.
// REGROUP-LABEL: func.func @train_step_bias(
// REGROUP: fusion.fused_matmul {{.*}}col_bias(%{{.*}} : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm>
// REGROUP: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<rms_norm_grad>
// REGROUP-NOT: fusion.rms_norm
// REGROUP: return
func.func @train_step_bias(%x: tensor<32x48xf32>, %w1: tensor<256x48xf32>, %b1: tensor<256xf32>, %w2: tensor<256x16xf32>, %dy: tensor<32x16xf32>)
    -> (tensor<32x16xf32>, tensor<32x48xf32>) {
  %z = fusion.matmul %x, %w1 bias(%b1 : tensor<256xf32>) {transpose_rhs} : tensor<32x48xf32>, tensor<256x48xf32> -> tensor<32x256xf32>
  %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>
  %y = fusion.matmul %h, %w2 : tensor<32x256xf32>, tensor<256x16xf32> -> tensor<32x16xf32>
  %dh = fusion.matmul %dy, %w2 {transpose_rhs} : tensor<32x16xf32>, tensor<256x16xf32> -> tensor<32x256xf32>
  %dz = fusion.rms_norm_grad %dh, %z, %rstd : tensor<32x256xf32>, tensor<32x256xf32>, tensor<32xf32> -> tensor<32x256xf32>
  %dx = fusion.matmul %dz, %w1 : tensor<32x256xf32>, tensor<256x48xf32> -> tensor<32x48xf32>
  return %y, %dx : tensor<32x16xf32>, tensor<32x48xf32>
}
}
