// REQUIRES: ptxas, fusion-runtime
// Test that fusion-compile turns a fusion module into a shared library that
// exports the destination-passing host functions (one holding two fused
// GEMMs with a device buffer between them, one a post-RMSNorm over 1024
// columns that runs as a cluster of 4 CTAs, one over 2048 columns whose
// statistics go through global memory) and needs only the runtime
// (mgpu* entry points, the SM count of persistent grids, the co-resident
// cluster count of persistent cluster grids) besides libc, that each comes
// with its description (__fusion_signature_<function>), and that a failing
// step is reported with the step's name and a non-zero exit code.
// RUN: fusion-compile %s -o %t.so
// RUN: llvm-nm -D %t.so | FileCheck %s
// RUN: not fusion-compile %S/Inputs/not-planned.mlir -o %t.bad.so 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not fusion-compile %s 2>&1 | FileCheck %s --check-prefix=USAGE
// CHECK-DAG: T block
// CHECK-DAG: T chain
// CHECK-DAG: T wide
// CHECK-DAG: T wider
// CHECK-DAG: R __fusion_signature_block
// CHECK-DAG: R __fusion_signature_chain
// CHECK-DAG: R __fusion_signature_wide
// CHECK-DAG: R __fusion_signature_wider
// CHECK-DAG: U fusionrtMultiprocessorCount
// CHECK-DAG: U fusionrtMaxActiveClusters
// CHECK-DAG: U fusionrtCooperativeGridLimit
// CHECK-DAG: U mgpuLaunchClusterKernel
// CHECK-DAG: U mgpuMemAlloc
// CHECK-DAG: U mgpuMemFree
// CHECK-DAG: U mgpuLaunchKernel
// CHECK-DAG: U mgpuModuleLoad
// CHECK-DAG: U mgpuTensorMapEncodeTiledMemref
// ERR: error: 'fusion.fused_matmul' op expected lhs and rhs of one element type
// ERR: fusion-compile: fusion-opt failed (exit 1)
// USAGE: usage: fusion-compile in.mlir -o out.so
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @block(%x: tensor<512x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<512x256xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<512x256xbf16> -> tensor<512x256xbf16>
  %y = fusion.matmul %n, %w : tensor<512x256xbf16>, tensor<256x256xbf16> -> tensor<512x256xbf16>
  return %y : tensor<512x256xbf16>
}
func.func @chain(%x: tensor<512x256xbf16>, %w1: tensor<256x512xbf16>, %w2: tensor<512x256xbf16>) -> tensor<512x256xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<512x256xbf16> -> tensor<512x256xbf16>
  %h = fusion.matmul %n, %w1 : tensor<512x256xbf16>, tensor<256x512xbf16> -> tensor<512x512xbf16>
  %z = fusion.matmul %h, %w2 : tensor<512x512xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
  %y = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<512x256xbf16> -> tensor<512x256xbf16>
  return %y : tensor<512x256xbf16>
}
func.func @wide(%x: tensor<512x256xbf16>, %w: tensor<256x1024xbf16>) -> tensor<512x1024xbf16> {
  %h = fusion.matmul %x, %w : tensor<512x256xbf16>, tensor<256x1024xbf16> -> tensor<512x1024xbf16>
  %y = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<512x1024xbf16> -> tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
}
func.func @wider(%x: tensor<512x256xbf16>, %w: tensor<256x2048xbf16>) -> tensor<512x2048xbf16> {
  %h = fusion.matmul %x, %w : tensor<512x256xbf16>, tensor<256x2048xbf16> -> tensor<512x2048xbf16>
  %y = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<512x2048xbf16> -> tensor<512x2048xbf16>
  return %y : tensor<512x2048xbf16>
}
}
