// RUN: fusion-opt %s -convert-fusion-to-gpu | FileCheck %s
// Test that every exported host function comes with its description: a
// constant, NUL-terminated, externally visible string
// __fusion_signature_<function> in the Python loader's signature syntax
// (the arguments, then the results as the output arguments the caller
// passes; a dynamic size the ops tie to another named, s0, s1, ...:
// test/Conversion/LibraryABI/size-ties.mlir), and that a private function, which the
// library does not export, has none.

// CHECK: func.func @rms(
// CHECK: func.func @act(%{{.*}}: memref<?x4096xbf16>, %{{.*}}: memref<?x4096xbf16>)
// CHECK: func.func private @hidden(
// CHECK-NOT: __fusion_signature_hidden
// CHECK-DAG: llvm.mlir.global external constant @__fusion_signature_rms("arg0: bf16[s0,1024]; arg1: bf16[1024]; result0: bf16[s0,1024]; result1: f32[s0]\00")
// CHECK-DAG: llvm.mlir.global external constant @__fusion_signature_ln_odd("arg0: f32[2,s0,1001]; result0: f32[2,s0,1001]; result1: f32[2,s0]; result2: f32[2,s0]\00")
// CHECK-DAG: llvm.mlir.global external constant @__fusion_signature_bias("arg0: f16[s0,768]; arg1: f16[768]; result0: f16[s0,768]\00")
// CHECK-DAG: llvm.mlir.global external constant @__fusion_signature_act("arg0: bf16[s0,4096]; result0: bf16[s0,4096]\00")
// CHECK-NOT: __fusion_signature_hidden

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<?xf32>) {
  %y, %r = fusion.rms_norm %x weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  return %y, %r : tensor<?x1024xbf16>, tensor<?xf32>
}
func.func @ln_odd(%x: tensor<2x?x1001xf32>) -> (tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32>) {
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<2x?x1001xf32> -> tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32>
  return %y, %m, %r : tensor<2x?x1001xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}
func.func @bias(%x: tensor<?x768xf16>, %b: tensor<768xf16>) -> tensor<?x768xf16> {
  %y = fusion.add %x, %b : tensor<?x768xf16>, tensor<768xf16>
  return %y : tensor<?x768xf16>
}
func.func @act(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.activation %x {activation = #fusion.activation<silu>} : tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func private @hidden(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}
