// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --post-residual: OLMo 2's attention output as its
// users write it (o_proj, its RMSNorm, the residual stream added after the
// norm) is one GEMM whose norm epilogue adds the stream (post_residual,
// fusion-plan-kernels post-residuals); by default (off: slower than the add
// kernel on an H100, session 46) the add stays a row kernel.
// RUN: fusion-compile %s -o %t.so --post-residual --keep-temps %t.on
// RUN: fusion-compile %s -o %t-off.so --keep-temps %t.off
// RUN: FileCheck %s --check-prefix=ON < %t.on/host.mlir
// RUN: FileCheck %s --check-prefix=OFF < %t.off/host.mlir
// ON-COUNT-1: gpu.launch_func
// ON-NOT: gpu.launch_func
// OFF-COUNT-2: gpu.launch_func

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @olmo2_post_h1024(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %g: tensor<1024xbf16>, %r: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %p = fusion.matmul %x, %w {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %y = fusion.add %r, %n : tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}
