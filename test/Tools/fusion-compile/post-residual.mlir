// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --post-residual: OLMo 2's attention output as its
// users write it (o_proj, its RMSNorm, the residual stream added after the
// norm) is one GEMM whose norm epilogue adds the stream (post_residual,
// fusion-plan-kernels post-residuals); by default (off: slower than the add
// kernel on an H100, session 46) the add stays a row kernel.
// RUN: fusion-compile %s -o %t.so --post-residual --keep-temps %t.on && FileCheck %s --check-prefix=ON < %t.on/host.mlir
// RUN: fusion-compile %s -o %t-off.so --keep-temps %t.off && FileCheck %s --check-prefix=OFF < %t.off/host.mlir
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SYM
// RUN: llvm-nm -D --defined-only %t-off.so | FileCheck %s --check-prefix=SYM
// In the host function's flattened memrefs, %arg19 is r's (the fourth
// argument: the stream) and %arg26 y's (the result).
// With the flag: one launch, the GEMM writing y itself, r its argument
// right after y (GemmArg::PostResidual follows Output), no add kernel.
// ON: gpu.launch_func {{.*}}@fusion_kernels::@olmo2_post_h1024_kernel0 {{.*}}args({{[^,]*, [^,]*, [^,]*, [^,]*, [^,]*, }}%arg26 : !llvm.ptr, %arg27 : !llvm.ptr, {{[^,]*, [^,]*, [^,]*, [^,]*, [^,]*, }}%arg19 : !llvm.ptr
// ON-NOT: gpu.launch_func
// By default: the GEMM writes the norm's output to an intermediate buffer
// and the add kernel reads it and r and writes y.
// OFF: gpu.launch_func {{.*}}@fusion_kernels::@olmo2_post_h1024_kernel0 {{.*}}args({{[^,]*, [^,]*, [^,]*, [^,]*, [^,]*, }}%[[N:[0-9]+]] : !llvm.ptr, %[[N]] : !llvm.ptr,
// OFF-NOT: %arg19
// OFF: gpu.launch_func {{.*}}@fusion_kernels::@olmo2_post_h1024_kernel1 {{.*}}args(%arg19 : !llvm.ptr, %arg20 : !llvm.ptr, {{[^,]*, [^,]*, [^,]*, }}%[[N]] : !llvm.ptr, %[[N]] : !llvm.ptr, {{[^,]*, [^,]*, [^,]*, }}%arg26 : !llvm.ptr
// OFF-NOT: gpu.launch_func
// SYM: T olmo2_post_h1024

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @olmo2_post_h1024(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %g: tensor<1024xbf16>, %r: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %p = fusion.matmul %x, %w {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %n = fusion.rms_norm %p weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %y = fusion.add %r, %n : tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}
