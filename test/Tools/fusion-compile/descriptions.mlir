// REQUIRES: ptxas, fusion-runtime
// Test that a library built by fusion-compile exports, beside each host
// function, its description __fusion_signature_<function> (and nothing of
// the C library), and that the Python loader reads the descriptions from the
// file, checks a hand-written signature against them and names the
// functions that exist, and refuses a call whose output has other rows than
// its input (the size s0 the function ties), all without a GPU or a driver.
// RUN: fusion-compile %s -o %t.so
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// RUN: %python %S/Inputs/describe.py %t.so fusion-compile | FileCheck %s --check-prefix=LOADER
// CHECK-DAG: T rows
// CHECK-DAG: R __fusion_signature_rows
// CHECK-DAG: T norm_signature
// CHECK-DAG: R __fusion_signature_norm_signature
// CHECK-NOT: {{ (malloc|free|memcpy|main)$}}
// LOADER-DAG: norm_signature: arg0: bf16[64,1024]; result0: bf16[64,1024]
// LOADER-DAG: rows: arg0: bf16[s0,1024]; arg1: bf16[1024]; result0: bf16[s0,1024]
// LOADER: AttributeError: LIB exports no function 'nope'; its functions: 'norm_signature', 'rows'
// LOADER: ArgumentError: rows: the signature given, 'x: bf16[M,512]; y: bf16[M,512]', does not match the library's description, 'arg0: bf16[s0,1024]; arg1: bf16[1024]; result0: bf16[s0,1024]': expected 3 arguments, but got 2
// LOADER: rows bound: {'s0': 8}
// LOADER: ArgumentError: rows: argument 2 ('result0'): expected size s0 = 8 in dimension 0 (bound by argument 0 ('arg0') dimension 0), but got 4
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rows(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y = fusion.add %x, %g : tensor<?x1024xbf16>, tensor<1024xbf16>
  return %y : tensor<?x1024xbf16>
}
// Named like a description in the old convention: a function of its own.
func.func @norm_signature(%x: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  return %y : tensor<64x1024xbf16>
}
}
