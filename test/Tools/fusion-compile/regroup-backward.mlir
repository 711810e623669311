// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --regroup-backward on a training step written with
// the dialect's unfused ops (Linear -> RMSNorm with its weight -> Linear):
// by default the norm's gradient stays a standalone kernel (eleven launches:
// W2 diag(g) (fusion-fold-norm-weight), two forward GEMMs, the first with
// the norm in its epilogue writing x_hat, two dgrad GEMMs, two weight
// gradients split along the tokens with their two sum kernels, the norm
// gradient's dx and dg kernels); with the flag it rides in the dgrad GEMM's
// epilogue (nine: regrouping runs first and takes the gradient, so nothing
// is folded; its dg partial rows are summed by <kernel>_params).
// Both libraries build.
// RUN: fusion-compile %s -o %t.so --keep-temps %t.default && FileCheck %s --check-prefix=DEFAULT < %t.default/host.mlir
// RUN: fusion-compile %s -o %t-regroup.so --regroup-backward --keep-temps %t.regroup && FileCheck %s --check-prefix=REGROUP < %t.regroup/host.mlir
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=NM
// RUN: llvm-nm -D --defined-only %t-regroup.so | FileCheck %s --check-prefix=NM
// DEFAULT-COUNT-11: gpu.launch_func
// DEFAULT-NOT: gpu.launch_func
// REGROUP-COUNT-9: gpu.launch_func
// REGROUP-NOT: gpu.launch_func
// NM: T step
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @step(%x: tensor<?x256xbf16>, %w1: tensor<256x256xbf16>, %g: tensor<256xbf16>, %w2: tensor<256x256xbf16>, %dy: tensor<?x256xbf16>)
    -> (tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<256x256xbf16>, tensor<256xf32>, tensor<256x256xbf16>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<256x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<256x256xbf16>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<256x256xbf16>, tensor<256xf32>, tensor<256x256xbf16>
}
}
