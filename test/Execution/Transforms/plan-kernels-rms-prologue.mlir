// fusion-plan-kernels{rms-prologue}' fold of the RMSNorm gradient into the
// attention backward keeps the program's values: the Kunlun block's backward
// (rms_norm_grad with its weight, gdpa_grad, dh + dq1, layer_norm_grad, the
// outer residual), bf16, runs on the CPU on the same random inputs before and
// after the pass. The fold itself is exact (the prologue rounds dh to bf16
// before the attention reads it, as the unfused program does): against the
// program after the pass without it (the residual folds only), no
// difference at all. Against the program as written, the residual folds
// round dq1 + dh and dx + d out once instead of twice, which the LayerNorm
// bias gradient sums over the 16 tokens (up to 0.04 here).
// RUN: fusion-opt %s -fusion-plan-kernels -o %t.mlir
// RUN: fusion-runner %t.mlir -e block_backward --after-passes='fusion-plan-kernels{rms-prologue=true}' --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e block_backward --after-passes='fusion-plan-kernels{rms-prologue=true}' --atol=5e-2 --rtol=2e-2 | FileCheck %s
// The rewrite happened:
// RUN: fusion-opt %s -fusion-plan-kernels=rms-prologue=true | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: without dh in dq the values differ.
// RUN: not fusion-runner %s -e block_backward --compare=block_backward_without_dh --atol=5e-2 --rtol=2e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-LABEL: func.func @block_backward(
// IR-NOT: fusion.rms_norm_grad
// IR: fusion.gdpa_grad {{.*}} rms_norm_grad({{.*}}) rms_weight({{.*}}) {{{.*}}grad_residual
// IR-NOT: fusion.rms_norm_grad
// IR: fusion.layer_norm_grad {{.*}} residual(
// IR-LABEL: func.func @block_backward_without_dh(

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// bench/attention/gen_attention.py block_backward_lines, B = 2, L = 8,
// H = 2, D = 64, L_kv = 16.
func.func @block_backward(%dout: tensor<2x8x2x64xbf16>, %qf: tensor<2x8x128xbf16>, %ln: tensor<2x8x2x64xbf16>,
                          %hf: tensor<2x8x128xbf16>, %m: tensor<2x8xf32>, %r: tensor<2x8xf32>, %rr: tensor<2x8xf32>,
                          %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>, %lnw: tensor<128xbf16>, %rmsw: tensor<128xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) {
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rmsw : tensor<128xbf16>)
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  %dlnq = fusion.add %dh, %dq1 : tensor<2x8x2x64xbf16>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lnw : tensor<128xbf16>) {with_bias_grad}
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>, tensor<128xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dq = fusion.add %dqln, %dout : tensor<2x8x2x64xbf16>
  return %dq, %dk, %dv, %dlw, %dlb, %drw
      : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
}
// The same without dh in dln_q (the inner residual's gradient lost).
func.func @block_backward_without_dh(%dout: tensor<2x8x2x64xbf16>, %qf: tensor<2x8x128xbf16>, %ln: tensor<2x8x2x64xbf16>,
                                     %hf: tensor<2x8x128xbf16>, %m: tensor<2x8xf32>, %r: tensor<2x8xf32>, %rr: tensor<2x8xf32>,
                                     %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>, %lnw: tensor<128xbf16>, %rmsw: tensor<128xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) {
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rmsw : tensor<128xbf16>)
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  %dlnqf = tensor.collapse_shape %dq1 [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lnw : tensor<128xbf16>) {with_bias_grad}
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>, tensor<128xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dq = fusion.add %dqln, %dout : tensor<2x8x2x64xbf16>
  return %dq, %dk, %dv, %dlw, %dlb, %drw
      : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
}
}
