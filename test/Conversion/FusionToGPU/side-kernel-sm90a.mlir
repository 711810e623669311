// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels=side-kernels=false --convert-fusion-to-gpu | FileCheck %s --check-prefix=OFF
// RUN: fusion-runner %s -e step --after-passes=fusion-plan-kernels --atol=2e-2 --rtol=2e-2 | FileCheck %s --check-prefix=CPU
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu=norm-grad-stages=-1 | FileCheck %s --check-prefix=STAGED
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s --check-prefix=UNSTAGED
// RUN: not fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu=norm-grad-stages=1 2>&1 | FileCheck %s --check-prefix=BAD

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

// With norm-grad-stages=-1 (side kernels only; 0, none, by default: slower
// on an H100, session 52) the norm gradient beside the GEMM stages its rows
// through shared memory: each thread copies
// its rstd and its vectors of x and dy of a step into a ring of 3 steps
// (cp.async, 16 bytes, L1 bypassed), steps 0 and 1 before the loop; each
// step first issues the copies of the step 2 ahead (one group a step, empty
// past the rows), then waits until at most 2 groups are pending (its own
// landed) and reads its slot. By default: loads to registers.
// STAGED-LABEL: gpu.func @step_kernel1(
// STAGED-COUNT-2: nvgpu.device_async_create_group
// STAGED: scf.for
// STAGED: nvgpu.device_async_copy %arg2[%{{.*}}], %{{.*}}[%{{.*}}], 1 : memref<?xf32> to memref<768xf32, #gpu.address_space<workgroup>>
// STAGED: nvgpu.device_async_copy %arg1[%{{.*}}], %{{.*}}[%{{.*}}], 8 {bypassL1} : memref<?xbf16> to memref<12288xbf16, #gpu.address_space<workgroup>>
// STAGED: nvgpu.device_async_copy %arg0[%{{.*}}], %{{.*}}[%{{.*}}], 8 {bypassL1} : memref<?xbf16> to memref<12288xbf16, #gpu.address_space<workgroup>>
// STAGED: %[[GROUP:.*]] = nvgpu.device_async_create_group
// STAGED-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 2 : i32}
// STAGED: gpu.return
// UNSTAGED-LABEL: gpu.func @step_kernel1(
// UNSTAGED-NOT: nvgpu.device_async_copy
// UNSTAGED: gpu.return
// BAD: convert-fusion-to-gpu: expected norm-grad-stages to be -1 (side kernels only), 0 (none) or at least 2, but got 1
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
