// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels=side-kernels=false --convert-fusion-to-gpu | FileCheck %s --check-prefix=OFF
// RUN: fusion-runner %s -e step --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s --check-prefix=CPU

// A norm gradient beside the weight gradient before it (fusion.side_kernel):
// the host function forks two side chains after the work so far (each a
// `gpu.wait async` of its own, which the runtime answers with a stream
// waiting for the main stream's work so far, of the greatest priority, then
// of the least, as the call before it asks); the GEMM and its split-K sum go
// on the first (their CTAs placed first), the norm gradient's kernels on the
// second, and a `gpu.wait` of each joins them to the main chain; every
// buffer freed in between is freed after the joins (the pool must not hand
// it to another stream while a kernel there may read it). Without side
// kernels, one chain. On the CPU the planned program computes what the
// unplanned one does.

// CHECK-LABEL: func.func @step
// CHECK: %[[MAIN:.*]] = gpu.wait async
// CHECK: %[[HIGH:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @fusionrtNextSideStreamPriority(%[[HIGH]])
// CHECK-NEXT: %[[GEMM:.*]] = gpu.wait async
// CHECK: %[[LOW:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @fusionrtNextSideStreamPriority(%[[LOW]])
// CHECK-NEXT: %[[SIDE:.*]] = gpu.wait async
// CHECK: %[[WS:.*]], %[[WST:.*]] = gpu.alloc async [%[[GEMM]]]
// CHECK: gpu.launch_func async [%[[WST]]] @fusion_kernels::@step_kernel0 blocks
// CHECK: %[[SUM:.*]] = gpu.launch_func async [%{{.*}}] @fusion_kernels::@step_kernel0_splitk
// CHECK: %[[PS:.*]], %[[PT:.*]] = gpu.alloc async [%[[SIDE]]]
// CHECK: %[[NG:.*]] = gpu.launch_func async [%[[PT]]] @fusion_kernels::@step_kernel1 blocks
// CHECK: %[[P:.*]] = gpu.launch_func async [%[[NG]]] @fusion_kernels::@step_kernel1_params
// CHECK-NEXT: gpu.wait [%[[SUM]]]
// CHECK-NEXT: gpu.wait [%[[P]]]
// CHECK-NEXT: %[[F1:.*]] = gpu.dealloc async [%[[MAIN]]] %[[WS]]
// CHECK-NEXT: %[[F2:.*]] = gpu.dealloc async [%[[F1]]] %[[PS]]
// CHECK-NEXT: gpu.wait [%[[F2]]]
// CHECK-NEXT: return
// OFF-LABEL: func.func @step
// OFF-COUNT-1: gpu.wait async
// OFF-NOT: gpu.wait async
// OFF: return
// CPU: PASS
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @step(%dy: tensor<256x1024xbf16>, %n: tensor<256x1024xbf16>, %dn: tensor<256x1024xbf16>,
                %h: tensor<256x1024xbf16>, %rstd: tensor<256xf32>, %g: tensor<1024xbf16>)
    -> (tensor<1024x1024xbf16>, tensor<256x1024xbf16>, tensor<1024xf32>) {
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<256x1024xbf16>, tensor<256x1024xbf16> -> tensor<1024x1024xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>)
      : tensor<256x1024xbf16>, tensor<256x1024xbf16>, tensor<256xf32> -> tensor<256x1024xbf16>, tensor<1024xf32>
  return %dw2, %dh, %dg : tensor<1024x1024xbf16>, tensor<256x1024xbf16>, tensor<1024xf32>
}
}
