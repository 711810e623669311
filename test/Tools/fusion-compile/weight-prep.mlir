// REQUIRES: ptxas
// Test that a program whose weights are marked (fusion.weight) compiles, for
// the GPU and for the CPU, into a library exporting @f and its weight
// preparation @f_prepare (fusion-outline-weight-prep in fusion-fuse), each
// described: @f_prepare takes the weights in order and returns the folded
// weight; @f takes its own arguments, then the prepared value.
// RUN: fusion-compile %s -o %t.so
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// RUN: %python %S/Inputs/signatures.py %t.so | FileCheck %s --check-prefix=SIG
// RUN: fusion-compile --cpu %s -o %t-cpu.so
// RUN: %python %S/Inputs/signatures.py %t-cpu.so | FileCheck %s --check-prefix=SIG
// CHECK-DAG: T prenorm
// CHECK-DAG: T prenorm_prepare
// SIG: prenorm: arg0: bf16[s0,512]; arg1: bf16[512]; arg2: bf16[1024,512]; arg3: bf16[1024,512]; result0: bf16[s0,1024]
// SIG: prenorm_prepare: arg0: bf16[512]; arg1: bf16[1024,512]; result0: bf16[1024,512]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @prenorm(%x: tensor<?x512xbf16>, %g: tensor<512xbf16> {fusion.weight},
                   %w: tensor<1024x512xbf16> {fusion.weight}) -> tensor<?x1024xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<512xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x512xbf16> -> tensor<?x512xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}
