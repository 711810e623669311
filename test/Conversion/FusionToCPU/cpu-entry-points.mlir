// RUN: fusion-opt %s -fusion-cpu-entry-points | FileCheck %s
// RUN: fusion-opt %s -fusion-to-cpu | FileCheck %s --check-prefix=LLVM
// Test that each public function becomes a library entry point in the ABI
// the loader calls (results as output memrefs written in place, returning
// nothing), described by __fusion_signature_<function>; private functions
// and the module's GPU target are left out; and that the fusion-to-cpu
// pipeline takes it to the LLVM dialect with the result computed in the
// caller's buffer (no copy).

// CHECK: module {
// CHECK-LABEL: func.func @layer(
// CHECK-SAME: %[[X:.*]]: tensor<?x64xbf16>, %[[G:.*]]: tensor<64xbf16>, %[[Y:.*]]: memref<?x64xbf16>, %[[R:.*]]: memref<?xf32>) {
// CHECK: %[[N:.*]], %[[S:.*]] = fusion.rms_norm %[[X]] weight(%[[G]]
// CHECK: bufferization.materialize_in_destination %[[N]] in restrict writable %[[Y]] : (tensor<?x64xbf16>, memref<?x64xbf16>) -> ()
// CHECK: bufferization.materialize_in_destination %[[S]] in restrict writable %[[R]] : (tensor<?xf32>, memref<?xf32>) -> ()
// CHECK-NEXT: return{{$}}
// CHECK: func.func private @helper(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-DAG: llvm.mlir.global external constant @__fusion_signature_layer("arg0: bf16[s0,64]; arg1: bf16[64]; result0: bf16[s0,64]; result1: f32[s0]\00")
// CHECK-DAG: llvm.mlir.global external constant @__fusion_signature_twice("arg0: f32[8,16]; result0: f32[8,16]; result1: f32[8,16]\00")
// CHECK-NOT: __fusion_signature_helper

// LLVM-LABEL: llvm.func @layer(
// LLVM-NOT: memcpy
// LLVM-NOT: memrefCopy
// LLVM: llvm.return
// LLVM: llvm.mlir.global external constant @__fusion_signature_layer
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @layer(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>)
    -> (tensor<?x64xbf16>, tensor<?xf32>) {
  %y, %rstd = fusion.rms_norm %x weight(%g : tensor<64xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<?x64xbf16> -> tensor<?x64xbf16>, tensor<?xf32>
  return %y, %rstd : tensor<?x64xbf16>, tensor<?xf32>
}
// One value returned twice, each into its own buffer.
func.func @twice(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %y = fusion.add %x, %x : tensor<8x16xf32>
  return %y, %y : tensor<8x16xf32>, tensor<8x16xf32>
}
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}
