// REQUIRES: ptxas
// Test the attention backward with a residual added to dq (fusion.gdpa_grad
// residual(...), as fusion-plan-kernels folds the Kunlun block's dh + dq) on
// sm_90a: the kernel takes the residual viewed flat as its last argument
// (dense after the heads, jagged after the offsets and dq); dQ's
// accumulator starts from the residual at its fragment positions, read from
// a block of the staging buffer the residual was copied into by cp.async
// (16 bytes a thread, zero fill past L_q or the sequence's end), or, when
// the residual is do itself and D = Dv, from the stage's dO tile (no copy).
// ptxas assembles every kernel: the dense ones at most 24 bytes of spills
// (20 with the copy, 4 for do), all outside the tile loop; the jagged
// one with the copy within 48 (the jagged kernel without a residual: 16).
// The jagged one with the copy keeps P^T in shared memory for dV's MMA,
// issued after the barrier: with P^T and dS^T as dV's and dK's A in
// registers, as the others have them, it spilled 76 bytes, not 36.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Kunlun's backward with a residual of its own: the launch's last argument
// is the residual viewed flat.
// CHECK-LABEL: func.func @kunlun_residual(
// CHECK-SAME: %[[R:[^:]*]]: memref<?x?x2x128xbf16>, %{{[^:]*}}: memref<?x?x2x128xbf16>, %{{[^:]*}}: memref<?x128x2x128xbf16>, %{{[^:]*}}: memref<?x128x2x128xbf16>)
// CHECK: %[[RFLAT:.*]] = memref.reinterpret_cast %[[R]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?x2x128xbf16> to memref<?xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_residual_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c214016_i32 args({{.*}}, %c2 : index, %[[RFLAT]] : memref<?xbf16>)
func.func @kunlun_residual(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %r: tensor<?x?x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%r : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

// The residual is do (the block's dh): passed the same way, read from the
// stage's dO tile.
// CHECK-LABEL: func.func @kunlun_do(
// CHECK-SAME: %[[DO:[^:]*]]: memref<?x?x2x128xbf16>,
// CHECK: %[[DOFLAT:.*]] = memref.reinterpret_cast %[[DO]] to offset: [0]
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_do_kernel0 {{.*}} args({{.*}}, %c2 : index, %[[DOFLAT]] : memref<?xbf16>)
func.func @kunlun_do(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%do : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

// Jagged q: the residual after the offsets and dq viewed flat.
// CHECK-LABEL: func.func @jagged_residual(
// CHECK-SAME: %[[JOFF:[^:]*]]: memref<?xi32>, %[[JR:[^:]*]]: memref<?x2x128xbf16>, %[[JDQ:[^:]*]]: memref<?x2x128xbf16>,
// CHECK-DAG: %[[JDQFLAT:.*]] = memref.reinterpret_cast %[[JDQ]] to offset: [0]
// CHECK-DAG: %[[JRFLAT:.*]] = memref.reinterpret_cast %[[JR]] to offset: [0]
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_residual_kernel0 {{.*}} args({{.*}}, %c2 : index, %[[JOFF]] : memref<?xi32>, %[[JDQFLAT]] : memref<?xbf16>, %[[JRFLAT]] : memref<?xbf16>)
func.func @jagged_residual(%do: tensor<?x2x128xbf16>, %q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>, %r: tensor<?x2x128xbf16>) -> (tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi32>) residual(%r : tensor<?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

// Jagged with do as the residual, D = Dv = 64, i64 offsets.
// CHECK-LABEL: func.func @jagged_do(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_do_kernel0 {{.*}} args({{.*}}, %{{.*}} : memref<?xi64>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>)
func.func @jagged_do(%do: tensor<?x2x64xbf16>, %q: tensor<?x2x64xbf16>, %k: tensor<?x100x2x64xbf16>, %v: tensor<?x100x2x64xbf16>, %off: tensor<?xi64>) -> (tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi64>) residual(%do : tensor<?x2x64xbf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16> -> tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>
  return %dq, %dk, %dv : tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>
}

}

// The kernels: the residual is the last argument; with a residual of its
// own, 4 copies of 16 bytes a thread per dQ block into the staging slot,
// waited for before dQ's MMAs; none when the residual is do.
// CHECK-LABEL: gpu.func @kunlun_residual_kernel0(
// CHECK-SAME: %{{[^:]*}}: index, %[[KR:[^:]*]]: memref<?xbf16>) kernel
// CHECK-COUNT-4: nvgpu.device_async_copy %[[KR]][%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?xbf16> to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-LABEL: gpu.func @kunlun_do_kernel0(
// CHECK-SAME: %{{[^:]*}}: index, %{{[^:]*}}: memref<?xbf16>) kernel
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-LABEL: gpu.func @jagged_residual_kernel0(
// CHECK-SAME: %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xbf16>, %[[JKR:[^:]*]]: memref<?xbf16>) kernel
// P^T and dS^T from shared memory there (see the spills below).
// CHECK-NOT: wgmma.mma_async.sync.aligned
// CHECK-COUNT-4: nvgpu.device_async_copy %[[JKR]]
// CHECK-LABEL: gpu.func @jagged_do_kernel0(
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: gpu.return

// The copies with their source size (16 bytes, or 0: zero fill).
// PTX-LABEL: .entry kunlun_residual_kernel0(
// PTX-COUNT-4: cp.async.cg.shared.global [%rd{{[0-9]+}}+{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// PTX: cp.async.commit_group;
// PTX: cp.async.wait_group 0;
// PTX-LABEL: .entry kunlun_do_kernel0(
// PTX-NOT: cp.async.cg.shared.global
// PTX-LABEL: .entry jagged_residual_kernel0(

// PTXAS-DAG: ptxas ok: kunlun_residual_kernel0 registers=168 spills={{[0-9]|1[0-9]|2[0-4]}}{{$}}
// PTXAS-DAG: ptxas ok: kunlun_do_kernel0 registers=168 spills={{[0-4]}}{{$}}
// PTXAS-DAG: ptxas ok: jagged_residual_kernel0 registers=168 spills={{[0-9]|[1-3][0-9]|4[0-8]}}{{$}}
// PTXAS-DAG: ptxas ok: jagged_do_kernel0 registers=168 spills={{[0-9]|[1-3][0-9]|4[0-8]}}{{$}}
