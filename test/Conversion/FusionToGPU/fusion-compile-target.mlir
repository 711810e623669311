// REQUIRES: ptxas, fusion-runtime
// fusion-compile --target CHIP builds for that GPU whatever fusion.target the
// module holds: this sm_90a program (a linear layer with bias, residual and
// LayerNorm) as an sm_100a library (tcgen05 kernels in an sm_100a cubin);
// an unknown chip is refused with the list of known ones.
// RUN: rm -rf %t.dir && fusion-compile %s -o %t.so --target sm_100a --keep-temps %t.dir
// RUN: FileCheck %s < %t.dir/host.mlir
// RUN: not fusion-compile %s -o %t.bad.so --target sm_80 2>&1 | FileCheck %s --check-prefix=BAD
// CHECK: gpu.binary @fusion_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_100a"
// BAD: error: fusion-set-target: unknown target chip 'sm_80', expected one of: sm_90a, sm_100a
// BAD: fusion-compile: fusion-opt failed (exit 1)
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @post_norm(%x: tensor<?x512xbf16>, %w: tensor<512x512xbf16>, %b: tensor<512xbf16>, %r: tensor<?x512xbf16>, %g: tensor<512xbf16>, %beta: tensor<512xbf16>) -> tensor<?x512xbf16> {
  %y = fusion.matmul %x, %w bias(%b : tensor<512xbf16>) {transpose_rhs} : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xbf16>
  %h = fusion.add %y, %r : tensor<?x512xbf16>
  %o, %m, %s = fusion.layer_norm %h weight(%g : tensor<512xbf16>) bias(%beta : tensor<512xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x512xbf16> -> tensor<?x512xbf16>, tensor<?xf32>, tensor<?xf32>
  return %o : tensor<?x512xbf16>
}
}
