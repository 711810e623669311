// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --l2-prefetch-a: the post-RMSNorm GEMM over 1024
// columns (a cluster of 4 CTAs with epilogue warps) is built with its
// producer prefetching the next tile's A into L2 (fusion-to-gpu
// l2-prefetch-a=true; the PTX is checked in
// Conversion/FusionToGPU/ptxas-cluster-sm90a.mlir), so the two libraries'
// device code differs; both export the function.
// RUN: fusion-compile %s -o %t.so --keep-temps %t.default
// RUN: fusion-compile %s -o %t-prefetch.so --l2-prefetch-a --keep-temps %t.prefetch
// The device binaries differ (the build times in the binary's properties,
// which differ from run to run, taken out):
// RUN: sed 's/properties = {[^}]*}//' %t.default/host.mlir > %t.default.bin
// RUN: sed 's/properties = {[^}]*}//' %t.prefetch/host.mlir > %t.prefetch.bin
// RUN: not cmp -s %t.default.bin %t.prefetch.bin
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// RUN: llvm-nm -D --defined-only %t-prefetch.so | FileCheck %s
// CHECK: T post_norm
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @post_norm(%x: tensor<?x512xbf16>, %w: tensor<1024x512xbf16>, %g: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %h = fusion.matmul %x, %w {transpose_rhs} : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  %y, %r = fusion.rms_norm %h weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}
}
