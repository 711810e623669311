// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --rows-prefetch (fusion-plan-kernels rows-prefetch,
// experimental): the standalone LayerNorm of a 1024-wide bf16 row gets the
// persistent, prefetching row kernel, its grid capped at 25 CTAs per SM
// (132 SMs: 3300); without the flag one CTA per row. Both libraries export
// the function.
// RUN: fusion-compile %s -o %t.so --rows-prefetch --keep-temps %t.prefetch
// RUN: fusion-compile %s -o %t-default.so --keep-temps %t.default
// RUN: FileCheck %s --check-prefix=PREFETCH < %t.prefetch/host.mlir
// RUN: FileCheck %s --check-prefix=DEFAULT < %t.default/host.mlir
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// PREFETCH: %[[CAP:.*]] = llvm.mlir.constant(3300 : index) : i64
// PREFETCH: llvm.intr.umin(%{{.*}}, %[[CAP]])
// DEFAULT-NOT: llvm.intr.umin
// CHECK: T ln
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y, %m, %r = fusion.layer_norm %x weight(%g : tensor<1024xbf16>) bias(%b : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}
}
