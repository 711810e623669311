// Test that a splat tensor constant of 16- or 32-bit floats (the row of ones
// fusion-plan-kernels multiplies B by for a LayerNorm prologue's column
// sums) becomes a device buffer filled by gpu.memset of the value, in stream
// order before its users: a temporary freed at the end, or the caller's
// output buffer when the function returns it; the memsets reach the
// runtime's mgpuMemset16 / mgpuMemset32.
// RUN: fusion-opt %s --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu | FileCheck %s --check-prefix=LLVM

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @fill_temp
// CHECK-SAME: (%[[X:.*]]: memref<2x64xbf16>, %[[OUT:.*]]: memref<2x64xbf16>)
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[BUF:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] () : memref<2x64xbf16>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : bf16
// CHECK-NEXT: %[[T2:.*]] = gpu.memset async [%[[T1]]] %[[BUF]], %[[ONE]] : memref<2x64xbf16>, bf16
// CHECK: %[[T3:.*]] = gpu.launch_func async [%[[T2]]] @fusion_kernels::@fill_temp_kernel0
// CHECK-NEXT: %[[T4:.*]] = gpu.dealloc async [%[[T3]]] %[[BUF]] : memref<2x64xbf16>
// CHECK-NEXT: gpu.wait [%[[T4]]]
func.func @fill_temp(%x: tensor<2x64xbf16>) -> tensor<2x64xbf16> {
  %c = arith.constant dense<1.0> : tensor<2x64xbf16>
  %y = fusion.add %x, %c : tensor<2x64xbf16>
  return %y : tensor<2x64xbf16>
}

// CHECK-LABEL: func.func @fill_result
// CHECK-SAME: (%{{.*}}: memref<2x64xf32>, %{{.*}}: memref<2x64xf32>, %[[OUT2:.*]]: memref<2x64xf32>)
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: gpu.memset async [%[[T0]]] %[[OUT2]], %[[HALF]] : memref<2x64xf32>, f32
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func
func.func @fill_result(%x: tensor<2x64xf32>) -> (tensor<2x64xf32>, tensor<2x64xf32>) {
  %c = arith.constant dense<0.5> : tensor<2x64xf32>
  %y = fusion.add %x, %x : tensor<2x64xf32>
  return %y, %c : tensor<2x64xf32>, tensor<2x64xf32>
}
}

// LLVM-LABEL: llvm.func @fill_temp
// LLVM: llvm.call @mgpuMemset16
// LLVM-LABEL: llvm.func @fill_result
// LLVM: llvm.call @mgpuMemset32
