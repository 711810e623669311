// The seed's Kunlun PFFN attention block as its users write it, with the
// norms' weights: LayerNorm(q) over all heads -> gdpa -> + ln_q -> RMSNorm
// -> + q. fusion-fuse forms it into fusion.norm_attention, which the GPU
// lowering runs as one FlashNormAttention kernel (a cluster of the two
// heads' CTAs). With norm-attention=false the block stays as its ops,
// reporting why, and runs whole as five kernels: the LayerNorm row kernel,
// the attention kernel, the add, the RMSNorm row kernel, the add.
// RUN: fusion-opt %s --fusion-fuse=report=true 2>&1 | FileCheck %s --check-prefix=FORMED
// RUN: fusion-opt %s --fusion-fuse --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s "--fusion-fuse=norm-attention=false report=true" 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: fusion-opt %s "--fusion-fuse=norm-attention=false" --convert-fusion-to-gpu | FileCheck %s --check-prefix=UNFUSED

// FORMED: remark: fusion.gdpa formed into fusion.norm_attention
// FORMED: fusion.norm_attention
// FORMED-NOT: fusion.gdpa

// CHECK-LABEL: func.func @kunlun_block(
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@kunlun_block_kernel0 clusters in (%{{.*}}, %{{.*}}, %{{.*}}) blocks in {{.*}} threads in (%{{.*}}384
// CHECK-NOT: gpu.launch_func

// OFF: remark: fusion.gdpa not formed into fusion.norm_attention: forming is off (fusion-fuse{norm-attention=false}); the block runs as its layer_norm, gdpa, add and rms_norm ops
// OFF: fusion.layer_norm
// OFF: fusion.gdpa
// OFF: fusion.rms_norm

// UNFUSED-LABEL: func.func @kunlun_block(
// UNFUSED: gpu.launch_func async {{.*}} @fusion_kernels::@kunlun_block_kernel0
// UNFUSED: gpu.launch_func async {{.*}} @fusion_kernels::@kunlun_block_kernel1 {{.*}} threads in (%{{.*}}384
// UNFUSED: gpu.launch_func async {{.*}} @fusion_kernels::@kunlun_block_kernel2
// UNFUSED: gpu.launch_func async {{.*}} @fusion_kernels::@kunlun_block_kernel3
// UNFUSED: gpu.launch_func async {{.*}} @fusion_kernels::@kunlun_block_kernel4
// UNFUSED-NOT: gpu.launch_func

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @kunlun_block(%q: tensor<?x512x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>,
                        %lnw: tensor<256xbf16>, %lnb: tensor<256xbf16>, %rmsw: tensor<256xbf16>) -> tensor<?x512x2x128xbf16> {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x512x2x128xbf16>
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<?x512x2x128xbf16> into tensor<?x512x256xbf16>
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : tensor<256xbf16>) bias(%lnb : tensor<256xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<?x512x256xbf16> -> tensor<?x512x256xbf16>, tensor<?x512xf32>, tensor<?x512xf32>
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [%b, 512, 2, 128] : tensor<?x512x256xbf16> into tensor<?x512x2x128xbf16>
  %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x512x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x512x2x128xbf16>
  %h = fusion.add %a, %ln : tensor<?x512x2x128xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<?x512x2x128xbf16> into tensor<?x512x256xbf16>
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : tensor<256xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<?x512x256xbf16> -> tensor<?x512x256xbf16>, tensor<?x512xf32>
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [%b, 512, 2, 128] : tensor<?x512x256xbf16> into tensor<?x512x2x128xbf16>
  %out = fusion.add %y, %q : tensor<?x512x2x128xbf16>
  return %out : tensor<?x512x2x128xbf16>
}
}
