// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile --small-m: Llama's pre-norm projection written as its
// users write it (RMSNorm with its weight, then nn.Linear's [out, in]
// weight), any token count, gets the small-M kernel (fusion-to-gpu
// small-m=true): the host launches its GEMM with the flag that picks the
// body; without the option the GEMM has one body and no flag.
// RUN: fusion-compile %s -o %t.so --small-m --keep-temps %t.small
// RUN: fusion-compile %s -o %t-default.so --keep-temps %t.default
// RUN: FileCheck %s --check-prefix=SMALL < %t.small/host.ll
// RUN: FileCheck %s --check-prefix=DEFAULT < %t.default/host.ll
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// SMALL: call i32 @fusionrtMultiprocessorCount()
// SMALL: select i1 %{{.*}}, i32 181760, i32 230912
// DEFAULT-NOT: i32 181760
// CHECK: T llama_prenorm
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @llama_prenorm(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<?x4096xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<4096xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
}
