// fusion-plan-kernels splits K for a weight gradient (transpose_lhs) whose
// output tiles would leave most SMs idle: split_k = min(16, 132 / tiles),
// at least two K steps per range where K is static; the kernel writes f32
// partial sums (no staging: a smaller smem_bytes). Larger outputs, and
// GEMMs that are not weight gradients, keep split_k = 1 (not printed).
// On by default; split-k=false turns it off:
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s
// RUN: fusion-opt %s -fusion-plan-kernels=split-k=false | FileCheck %s --check-prefix=OFF
// OFF-NOT: split_k
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// 512 x 512: 4 x 2 tiles -> 16 ranges.
// CHECK-LABEL: func.func @wgrad_512
// CHECK: split_k = 16>
func.func @wgrad_512(%dy: tensor<?x512xbf16>, %x: tensor<?x512xbf16>) -> tensor<512x512xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<?x512xbf16>, tensor<?x512xbf16> -> tensor<512x512xbf16>
  return %dw : tensor<512x512xbf16>
}
// 768 x 768: 6 x 3 tiles -> 7 ranges of the dynamic token count.
// CHECK-LABEL: func.func @wgrad_768
// CHECK: split_k = 7>
func.func @wgrad_768(%dy: tensor<?x768xbf16>, %x: tensor<?x768xbf16>) -> tensor<768x768xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<?x768xbf16>, tensor<?x768xbf16> -> tensor<768x768xbf16>
  return %dw : tensor<768x768xbf16>
}
// 1024 x 1024: 8 x 4 tiles -> 4 ranges.
// CHECK-LABEL: func.func @wgrad_1024
// CHECK: split_k = 4>
func.func @wgrad_1024(%dy: tensor<?x1024xbf16>, %x: tensor<?x1024xbf16>) -> tensor<1024x1024xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<1024x1024xbf16>
  return %dw : tensor<1024x1024xbf16>
}
// A static K of 256 tokens (4 K steps): at most 2 ranges.
// CHECK-LABEL: func.func @wgrad_short_k
// CHECK: split_k = 2>
func.func @wgrad_short_k(%dy: tensor<256x768xbf16>, %x: tensor<256x768xbf16>) -> tensor<768x768xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<256x768xbf16>, tensor<256x768xbf16> -> tensor<768x768xbf16>
  return %dw : tensor<768x768xbf16>
}
// 2048 x 2048 fills the SMs (128 tiles): no split.
// CHECK-LABEL: func.func @wgrad_2048
// CHECK-NOT: split_k
// CHECK: return
func.func @wgrad_2048(%dy: tensor<?x2048xbf16>, %x: tensor<?x2048xbf16>) -> tensor<2048x2048xbf16> {
  %dw = fusion.matmul %dy, %x {transpose_lhs} : tensor<?x2048xbf16>, tensor<?x2048xbf16> -> tensor<2048x2048xbf16>
  return %dw : tensor<2048x2048xbf16>
}
// A small forward GEMM keeps its kernel.
// CHECK-LABEL: func.func @small_forward
// CHECK-NOT: split_k
// CHECK: return
func.func @small_forward(%a: tensor<768x8192xbf16>, %b: tensor<8192x768xbf16>) -> tensor<768x768xbf16> {
  %c = fusion.matmul %a, %b : tensor<768x8192xbf16>, tensor<8192x768xbf16> -> tensor<768x768xbf16>
  return %c : tensor<768x768xbf16>
}
}
