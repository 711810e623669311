// REQUIRES: ptxas
// Test the sm_100a (tcgen05) attention backward with a residual added to dq
// (fusion.gdpa_grad residual(...)): the kernel takes the residual viewed
// flat as its last argument, like sm_90a's; each epilogue thread adds its
// token's row of the residual (clamped to the tile's last token), 32
// columns a load (4 x 16 bytes), to dQ as it reads it from tensor memory,
// before the rounding. The residual is read from global memory even when
// it is do: the MMA warp gives the stage back with dQ's commit, before the
// epilogue reads dQ. Jagged q: the dq rows outside every sequence are the
// residual's, copied 16 bytes a step. ptxas assembles all four without
// spilling. Never executed (no B200 here).
// RUN: fusion-opt %s --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx

module attributes {fusion.target = #fusion.target<"sm_100a">} {

func.func @kunlun_residual(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %r: tensor<?x?x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%r : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

func.func @kunlun_do(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v residual(%do : tensor<?x?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

func.func @jagged_residual(%do: tensor<?x2x128xbf16>, %q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>, %r: tensor<?x2x128xbf16>) -> (tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi32>) residual(%r : tensor<?x2x128xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}

func.func @jagged_do(%do: tensor<?x2x64xbf16>, %q: tensor<?x2x64xbf16>, %k: tensor<?x100x2x64xbf16>, %v: tensor<?x100x2x64xbf16>, %off: tensor<?xi64>) -> (tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi64>) residual(%do : tensor<?x2x64xbf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16> -> tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>
  return %dq, %dk, %dv : tensor<?x2x64xbf16>, tensor<?x100x2x64xbf16>, tensor<?x100x2x64xbf16>
}

}

// The launches: the residual viewed flat, last.
// CHECK-LABEL: func.func @kunlun_residual(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_residual_kernel0 {{.*}} threads in (%c256, {{.*}} args({{.*}} : index, %{{.*}} : memref<?xbf16>)
// CHECK-LABEL: func.func @kunlun_do(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_do_kernel0 {{.*}} args({{.*}} : index, %{{.*}} : memref<?xbf16>)
// CHECK-LABEL: func.func @jagged_residual(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_residual_kernel0 {{.*}} args({{.*}} : memref<?xi32>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>)
// CHECK-LABEL: func.func @jagged_do(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_do_kernel0 {{.*}} args({{.*}} : memref<?xi64>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>)
// CHECK-LABEL: gpu.func @kunlun_residual_kernel0(
// CHECK-SAME: %{{[^:]*}}: index, %{{[^:]*}}: memref<?xbf16>) kernel
// CHECK-LABEL: gpu.func @jagged_residual_kernel0(
// CHECK-SAME: %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xbf16>, %{{[^:]*}}: memref<?xbf16>) kernel

// The residual's loads: D = 128, a row of 16 x 16 bytes per tile (dense and
// jagged; jagged also 2 copy loops outside the sequences); D = 64, 8 + 2.
// PTX-LABEL: .entry kunlun_residual_kernel0(
// PTX-COUNT-16: ld.global.v4.b32
// PTX-NOT: ld.global.v4.b32
// PTX-LABEL: .entry kunlun_do_kernel0(
// PTX-COUNT-16: ld.global.v4.b32
// PTX-NOT: ld.global.v4.b32
// PTX-LABEL: .entry jagged_residual_kernel0(
// PTX-COUNT-18: ld.global.v4.b32
// PTX-NOT: ld.global.v4.b32
// PTX-LABEL: .entry jagged_do_kernel0(
// PTX-COUNT-10: ld.global.v4.b32
// PTX-NOT: ld.global.v4.b32

// PTXAS-DAG: ptxas ok: kunlun_residual_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: kunlun_do_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_residual_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_do_kernel0 registers={{[0-9]+}} spills=0
