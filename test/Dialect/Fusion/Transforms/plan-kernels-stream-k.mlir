// RUN: fusion-opt %s -split-input-file '-fusion-plan-kernels=stream-k=true' | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s --check-prefix=DEFAULT

// Test stream-K's choice (chooseStreamK, opt-in: off by default, measured
// slower on the H200): a plain GEMM whose 4096 tiles (65536 x 2048 in
// 128 x 256) are not a multiple of the 132 SMs spreads its last waves
// (stream_k); 8448 tiles (= 64 x 132) do not need it; a dynamic M decides
// at run time (stream_k); a norm epilogue's rows stay whole on their CTAs,
// and a Lazy prologue's row sums need every K step: no stream_k.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @stream_k_choice
// DEFAULT-LABEL: func.func @stream_k_choice
// DEFAULT-NOT: stream_k = true
func.func @stream_k_choice(%x: tensor<65536x2048xbf16>, %w: tensor<2048x2048xbf16>,
                           %x2: tensor<135168x1024xbf16>, %w2: tensor<1024x2048xbf16>,
                           %xd: tensor<?x512xbf16>, %wd: tensor<1024x512xbf16>)
    -> (tensor<65536x2048xbf16>, tensor<135168x2048xbf16>, tensor<?x1024xbf16>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: smem_bytes = 230912, stream_k = true>
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<65536x2048xbf16>, tensor<2048x2048xbf16> -> tensor<65536x2048xbf16>
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: smem_bytes = 230912, cluster_m = 2>
  %y2 = fusion.matmul %x2, %w2 : tensor<135168x1024xbf16>, tensor<1024x2048xbf16> -> tensor<135168x2048xbf16>
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: smem_bytes = 230912, stream_k = true>
  %y3 = fusion.matmul %xd, %wd {transpose_rhs} : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  return %y, %y2, %y3 : tensor<65536x2048xbf16>, tensor<135168x2048xbf16>, tensor<?x1024xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @stream_k_not_for_norms
// CHECK-NOT: stream_k = true
func.func @stream_k_not_for_norms(%a: tensor<65536x512xbf16>, %b: tensor<512x1024xbf16>,
                                  %g: tensor<1024xbf16>) -> tensor<65536x1024xbf16> {
  %y = fusion.fused_matmul %a, %b norm_weight(%g : tensor<1024xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<65536x512xbf16>, tensor<512x1024xbf16> -> tensor<65536x1024xbf16>
  %z = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<65536x512xbf16>, tensor<512x1024xbf16> -> tensor<65536x1024xbf16>
  %s = fusion.add %y, %z : tensor<65536x1024xbf16>
  return %s : tensor<65536x1024xbf16>
}
}
