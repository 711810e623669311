// The Kunlun PFFN attention block's training step as its users write it,
// forward and backward in one function with the dialect's unfused ops:
// LayerNorm(q) over all heads -> gdpa -> + ln_q -> RMSNorm -> + q, then
// given d out the chain rule back through rms_norm_grad, gdpa_grad, the
// inner residual, layer_norm_grad and the outer residual, with the three
// norm parameters' gradients. No sm_90a kernel takes the fused backward
// (fusion.norm_attention_grad) yet, so fusion-fuse forms the forward alone
// and has it save ln_q and h, which the backward reads (two more results of
// fusion.norm_attention), and says why: the step runs as four kernels (two
// of them with a parameter-gradient reduction): the FlashNormAttention
// forward (a cluster of the 2 heads' CTAs, 384 threads, writing ln_q and h
// beside the output and the statistics); the backward's RMSNorm gradient
// reading the saved h, gdpa_grad (256 threads: one consumer warpgroup for
// L_kv 16) reading the saved ln_q and adding dh to dq (fusion-plan-kernels
// folds the backward's first add, dh + dq1, into it as its residual), and
// the LayerNorm gradient with the outer residual's add folded in the same
// way (its residual operand: d out, read by the dx kernel, which writes dq
// into the caller's buffer through a view, no copy). On the CPU the step
// computes the same before and after fusion-fuse and fusion-plan-kernels.
// RUN: fusion-opt %s --fusion-fuse=report=true 2>&1 | FileCheck %s --check-prefix=FUSE
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels=report=true 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-runner %s -e train --after-passes=fusion-fuse,fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s --check-prefix=CPU
// On sm_100a the same (its FlashNormAttention kernel saves ln_q and h too):
// RUN: sed 's/"sm_90a"/"sm_100a"/' %s | fusion-opt --fusion-fuse=report=true 2>&1 | FileCheck %s --check-prefix=FUSE100

// FUSE: remark: fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for its backward, which runs as its rms_norm_grad, gdpa_grad, add and layer_norm_grad ops (no sm_90a kernel takes fusion.norm_attention_grad: the fused backward of the block (its row statistics through DSMEM like the forward's) is not implemented yet)
// FUSE: fusion.norm_attention {{.*}} -> tensor<2x8x2x64xbf16>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>
// FUSE-NOT: fusion.gdpa %
// FUSE: fusion.gdpa_grad
// FUSE100: remark: fusion.gdpa formed into fusion.norm_attention, saving ln_q and h for its backward, which runs as its rms_norm_grad, gdpa_grad, add and layer_norm_grad ops (no sm_100a kernel takes fusion.norm_attention_grad: the fused backward of the block (its row statistics through DSMEM like the forward's) is not implemented yet)
// FUSE100: fusion.norm_attention {{.*}} -> tensor<2x8x2x64xbf16>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>
// PLAN: %{{.*}}, %[[M:.*]], %[[R:.*]], %[[RR:.*]], %[[SAVED:.*]]:2 = fusion.norm_attention
// PLAN-NOT: fusion.layer_norm %
// PLAN: %[[HF:.*]] = tensor.collapse_shape %[[SAVED]]#1
// PLAN: %[[DHF:.*]], %{{.*}} = fusion.rms_norm_grad %{{.*}}, %[[HF]], %[[RR]]
// PLAN: %[[DH:.*]] = tensor.expand_shape %[[DHF]]
// PLAN: %[[DLNQ:[^,]*]], {{.*}} = fusion.gdpa_grad %[[DH]], %[[SAVED]]#0, {{.*}} residual(%[[DH]] : tensor<2x8x2x64xbf16>)
// PLAN: tensor.collapse_shape %[[DLNQ]]

// The attention backward's fold takes dh + dq1 first (no remark about it
// from the norm gradients' fold), then d out folds into the LayerNorm
// gradient:
// REMARK-NOT: not folded
// REMARK: remark: the fusion.add of its input gradient and a tensor of its shape folded in as its residual (one row kernel reads both)
// REMARK-NOT: not folded
// PLAN: %[[DOUTF:.*]] = tensor.collapse_shape %arg6 {{\[\[}}0], [1], [2, 3]]
// PLAN-NEXT: fusion.layer_norm_grad {{.*}}, %[[M]], %[[R]] {{.*}} residual(%[[DOUTF]] : tensor<2x8x128xbf16>) {with_bias_grad}
// PLAN-NEXT: %[[DQ:.*]] = tensor.expand_shape
// PLAN-NOT: fusion.add
// PLAN: return %{{.*}}, %[[DQ]],

// CHECK-LABEL: func.func @train(
// CHECK-SAME: %[[DQ:arg8]]: memref<2x8x2x64xbf16>
// CHECK: %[[DQV:.*]] = memref.collapse_shape %[[DQ]] {{\[\[}}0], [1], [2, 3]] : memref<2x8x2x64xbf16> into memref<2x8x128xbf16>
// The forward: ln_q's and h's tensor maps after the statistics.
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@train_kernel0 clusters in (%{{.*}}2{{.*}}) blocks in {{.*}} threads in (%{{.*}}384,{{.*}} memref<?x?xf32>, %{{.*}} : memref<?x?xf32>, %{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@train_kernel1
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@train_kernel1_params
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@train_kernel2 {{.*}} threads in (%{{.*}}256
// The gdpa_grad's next kernel is the LayerNorm gradient's (with its
// parameter reduction, and d out as its residual): dh + dq1 has no kernel
// of its own, nor has the outer residual's add.
// CHECK: %[[DQF:.*]] = memref.reinterpret_cast %[[DQV]] to
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@train_kernel3 {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %[[DQF]] : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : index)
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@train_kernel3_params
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.memcpy
// CHECK: return

// CPU: PASS

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @train(%q: tensor<2x8x2x64xbf16>, %k: tensor<2x16x2x64xbf16>, %v: tensor<2x16x2x64xbf16>,
    %lnw: tensor<128xbf16>, %lnb: tensor<128xbf16>, %rmsw: tensor<128xbf16>, %dout: tensor<2x8x2x64xbf16>)
    -> (tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>,
        tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) {
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : tensor<128xbf16>) bias(%lnb : tensor<128xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<2x8x128xbf16> -> tensor<2x8x128xbf16>, tensor<2x8xf32>, tensor<2x8xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16> -> tensor<2x8x2x64xbf16>
  %h = fusion.add %a, %ln : tensor<2x8x2x64xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : tensor<128xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<2x8x128xbf16> -> tensor<2x8x128xbf16>, tensor<2x8xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %out = fusion.add %y, %q : tensor<2x8x2x64xbf16>

  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rmsw : tensor<128xbf16>)
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  %dlnq = fusion.add %dh, %dq1 : tensor<2x8x2x64xbf16>
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lnw : tensor<128xbf16>) {with_bias_grad}
      : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32>, tensor<2x8xf32>
      -> tensor<2x8x128xbf16>, tensor<128xf32>, tensor<128xf32>
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64] : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
  %dq = fusion.add %dqln, %dout : tensor<2x8x2x64xbf16>
  return %out, %dq, %dk, %dv, %dlw, %dlb, %drw
      : tensor<2x8x2x64xbf16>, tensor<2x8x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>,
        tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
}
}
