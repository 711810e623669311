// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile on Llama's MLP as its users write it (the RMSNorm
// with its weight, gate_proj and up_proj, silu, the product, down_proj):
// by default the norm goes into both GEMMs' prologue (its weight folded
// into each weight on the device: two fusion.mul launches; its row
// statistics by a row kernel, as the gated GEMM's 22 column tiles of 128
// output columns would each recompute them) and gate, up, silu and the
// product are one GEMM over both weights, then down_proj: five launches,
// none of an activation or product kernel. With --no-fuse: the norm, three
// GEMMs, the activation kernel and the product kernel.
// RUN: fusion-compile %s -o %t.so --keep-temps %t.fused && FileCheck %s --check-prefix=FUSED < %t.fused/host.mlir
// RUN: fusion-compile %s -o %t-unfused.so --no-fuse --keep-temps %t.unfused && FileCheck %s --check-prefix=UNFUSED < %t.unfused/host.mlir
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SYM
// FUSED-COUNT-5: gpu.launch_func
// FUSED-NOT: gpu.launch_func
// UNFUSED-COUNT-6: gpu.launch_func
// UNFUSED-NOT: gpu.launch_func
// The weight folds and the statistics, then the gated GEMM and down_proj,
// both as CTA pairs sharing B's boxes (cluster_m = 2):
// RUN: FileCheck %s --check-prefix=ORDER < %t.fused/host.mlir
// ORDER: gpu.launch_func {{.*}}@llama_mlp_kernel0 blocks
// ORDER: gpu.launch_func {{.*}}@llama_mlp_kernel1 blocks
// ORDER: gpu.launch_func {{.*}}@llama_mlp_kernel2 blocks
// ORDER: gpu.launch_func {{.*}}@llama_mlp_kernel3 clusters
// ORDER: gpu.launch_func {{.*}}@llama_mlp_kernel4 clusters
// SYM: T llama_mlp

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @llama_mlp(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>, %wg: tensor<2816x1024xbf16>, %wu: tensor<2816x1024xbf16>, %wd: tensor<1024x2816xbf16>) -> tensor<?x1024xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %a = fusion.matmul %n, %wg {transpose_rhs} : tensor<?x1024xbf16>, tensor<2816x1024xbf16> -> tensor<?x2816xbf16>
  %u = fusion.matmul %n, %wu {transpose_rhs} : tensor<?x1024xbf16>, tensor<2816x1024xbf16> -> tensor<?x2816xbf16>
  %s = fusion.activation %a {activation = #fusion.activation<silu>} : tensor<?x2816xbf16>
  %p = fusion.mul %s, %u : tensor<?x2816xbf16>
  %y = fusion.matmul %p, %wd {transpose_rhs} : tensor<?x2816xbf16>, tensor<1024x2816xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}
