// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=side-sms=0 | FileCheck %s --check-prefix=NORESERVE
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=side-kernels=false | FileCheck %s --check-prefix=OFF
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=report=true -verify-diagnostics -o /dev/null
// RUN: not fusion-opt %s -split-input-file -fusion-plan-kernels=side-sms=-2 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: fusion-plan-kernels: expected side-sms to be -1 (a quarter of the target's SMs) or a count of at least 0, but got -2

// fusion-plan-kernels pairs a GEMM whose work units leave SMs idle with the
// norm gradient after it when that does not use the GEMM's result and the
// cost model expects the pair to take at most 7/8 of the two one after the
// other: the GEMM gets fusion.side_kernel (convert-fusion-to-gpu runs both
// on side streams, beside each other), and a split-K weight gradient is
// planned for a quarter fewer SMs (132 - 33: 3 K ranges of 32 tiles, not 4),
// the other 36 left to the norm gradient. side-sms=0 keeps its 4 ranges, 4
// SMs idle, too few to pay; side-kernels=false pairs nothing.

// A training step's dW2 = dy^T n and the norm gradient of dn = dy W2.
// CHECK-LABEL: func.func @wgrad_then_norm_grad
// CHECK: fusion.fused_matmul
// CHECK-SAME: {fusion.kernel = #fusion.kernel_config<{{.*}}split_k = 3>, fusion.side_kernel, transpose_lhs}
// CHECK: fusion.rms_norm_grad
// NORESERVE-LABEL: func.func @wgrad_then_norm_grad
// NORESERVE: {fusion.kernel = #fusion.kernel_config<{{.*}}split_k = 4>, transpose_lhs}
// NORESERVE-NOT: fusion.side_kernel
// OFF-LABEL: func.func @wgrad_then_norm_grad
// OFF: {fusion.kernel = #fusion.kernel_config<{{.*}}split_k = 4>, transpose_lhs}
// OFF-NOT: fusion.side_kernel
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wgrad_then_norm_grad(%dy: tensor<?x1024xbf16>, %n: tensor<?x1024xbf16>, %dn: tensor<?x1024xbf16>,
                                %h: tensor<?x1024xbf16>, %rstd: tensor<?xf32>, %g: tensor<1024xbf16>)
    -> (tensor<1024x1024xbf16>, tensor<?x1024xbf16>, tensor<1024xf32>) {
  // expected-remark @+2 {{GEMM kernel on sm_90a}}
  // expected-remark @+1 {{the next kernel (fusion.rms_norm_grad) runs beside it on a side stream: 96 work units would leave it 36 of 132 SMs, expected 0.85 of the two one after the other}}
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<1024x1024xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>)
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %dw2, %dh, %dg : tensor<1024x1024xbf16>, tensor<?x1024xbf16>, tensor<1024xf32>
}
}

// -----

// A weight gradient whose tiles (16 x 8 of 128 x 256 at 2048) are fewer than
// the SMs but too many to split leaves 4 SMs: too few for the norm gradient
// (LayerNorm's, after host work) to gain, so it stays after it.
// CHECK-LABEL: func.func @unsplit_wgrad
// CHECK: {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, transpose_lhs}
// CHECK-NOT: fusion.side_kernel
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @unsplit_wgrad(%dy: tensor<?x2048xbf16>, %n: tensor<?x2048xbf16>, %dn: tensor<?x2048xbf16>,
                         %h: tensor<?x2048xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>,
                         %g: tensor<2048xbf16>)
    -> (tensor<2048x2048xbf16>, tensor<?x2048xbf16>, tensor<2048xf32>, tensor<2048xf32>) {
  // expected-remark @+2 {{GEMM kernel on sm_90a}}
  // expected-remark @+1 {{the next kernel (fusion.layer_norm_grad) stays after it: 128 work units would leave it 4 of 132 SMs, expected 0.96 of the two one after the other}}
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x2048xbf16>, tensor<?x2048xbf16> -> tensor<2048x2048xbf16>
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %dn, %c0 : tensor<?x2048xbf16>
  %dh, %dg, %db = fusion.layer_norm_grad %dn, %h, %mean, %rstd weight(%g : tensor<2048xbf16>) {with_bias_grad}
      : tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x2048xbf16>, tensor<2048xf32>, tensor<2048xf32>
  return %dw2, %dh, %dg, %db : tensor<2048x2048xbf16>, tensor<?x2048xbf16>, tensor<2048xf32>, tensor<2048xf32>
}
}

// -----

// Not paired: the norm gradient reads the GEMM's result; the GEMM's token
// count is dynamic (its tiles unknown: a dgrad fills the GPU); another
// kernel comes first.
// CHECK-LABEL: func.func @not_paired
// CHECK-NOT: fusion.side_kernel
// CHECK: return
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @not_paired(%dy: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %n: tensor<?x1024xbf16>,
                      %h: tensor<?x1024xbf16>, %rstd: tensor<?xf32>, %g: tensor<1024xbf16>)
    -> (tensor<?x1024xbf16>, tensor<1024xf32>, tensor<1024x1024xbf16>, tensor<?x1024xbf16>, tensor<1024xf32>) {
  // expected-remark @+2 {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256}}
  // expected-remark @+1 {{small-M GEMM kernel on sm_90a}}
  %dn = fusion.matmul %dy, %w : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>)
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %dw = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<1024x1024xbf16>
  %sum = fusion.add %dn, %h : tensor<?x1024xbf16>
  %dh2, %dg2 = fusion.rms_norm_grad %sum, %h, %rstd weight(%g : tensor<1024xbf16>)
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %dh, %dg, %dw, %dh2, %dg2 : tensor<?x1024xbf16>, tensor<1024xf32>, tensor<1024x1024xbf16>, tensor<?x1024xbf16>, tensor<1024xf32>
}
}

// -----

// Not paired: the norm gradient's input gradient is the weight gradient's
// result viewed again (through host work between the two).
// CHECK-LABEL: func.func @dependent_through_reshape
// CHECK-NOT: fusion.side_kernel
// CHECK: return
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dependent_through_reshape(%a: tensor<?x512xbf16>, %b: tensor<?x512xbf16>, %h: tensor<512x512xbf16>,
                                     %rstd: tensor<512xf32>, %g: tensor<512xbf16>)
    -> (tensor<512x512xbf16>, tensor<512xf32>) {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %dw = fusion.matmul %a, %b {transpose_lhs} : tensor<?x512xbf16>, tensor<?x512xbf16> -> tensor<512x512xbf16>
  %v = tensor.expand_shape %dw [[0], [1, 2]] output_shape [512, 2, 256] : tensor<512x512xbf16> into tensor<512x2x256xbf16>
  %dn = tensor.collapse_shape %v [[0], [1, 2]] : tensor<512x2x256xbf16> into tensor<512x512xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<512xbf16>)
      : tensor<512x512xbf16>, tensor<512x512xbf16>, tensor<512xf32> -> tensor<512x512xbf16>, tensor<512xf32>
  return %dh, %dg : tensor<512x512xbf16>, tensor<512xf32>
}
}

// -----

// At 512 the split-K GEMM (8 tiles x 12 ranges beside it, 16 alone) is too
// short against the norm gradient on 36 SMs: it stays after it.
// CHECK-LABEL: func.func @short_wgrad
// CHECK-NOT: fusion.side_kernel
// CHECK: return
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @short_wgrad(%dy: tensor<?x512xbf16>, %n: tensor<?x512xbf16>, %dn: tensor<?x512xbf16>,
                       %h: tensor<?x512xbf16>, %rstd: tensor<?xf32>, %g: tensor<512xbf16>)
    -> (tensor<512x512xbf16>, tensor<?x512xbf16>, tensor<512xf32>) {
  // expected-remark @+2 {{GEMM kernel on sm_90a}}
  // expected-remark @+1 {{the next kernel (fusion.rms_norm_grad) stays after it: 96 work units would leave it 36 of 132 SMs, expected 0.90 of the two one after the other}}
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x512xbf16>, tensor<?x512xbf16> -> tensor<512x512xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<512xbf16>)
      : tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?xf32> -> tensor<?x512xbf16>, tensor<512xf32>
  return %dw2, %dh, %dg : tensor<512x512xbf16>, tensor<?x512xbf16>, tensor<512xf32>
}
}
