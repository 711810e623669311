// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --no-fp-contract: the kernels are built without
// fusion-contract-float-ops (fusion-to-gpu fp-contract=false; the PTX of
// both forms is checked in Conversion/FusionToGPU/contract-float-ops-sm90a.mlir),
// so the two libraries' device code differs; both export the function.
// RUN: fusion-compile %s -o %t.so --keep-temps %t.default
// RUN: fusion-compile %s -o %t-nofma.so --no-fp-contract --keep-temps %t.nofma
// The device binaries differ (the build times in the binary's properties,
// which differ from run to run, taken out):
// RUN: sed 's/properties = {[^}]*}//' %t.default/host.mlir > %t.default.bin
// RUN: sed 's/properties = {[^}]*}//' %t.nofma/host.mlir > %t.nofma.bin
// RUN: not cmp -s %t.default.bin %t.nofma.bin
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// RUN: llvm-nm -D --defined-only %t-nofma.so | FileCheck %s
// CHECK: T ln
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y, %m, %r = fusion.layer_norm %x weight(%g : tensor<1024xbf16>) bias(%b : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}
}
