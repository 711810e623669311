// REQUIRES: ptxas
// The attention backward (fusion.gdpa_grad) on sm_90a with keys past 128:
// two passes of 128 keys over each unit's query tiles (K and V of the pass
// TMA-loaded at key 128 p, dV and dK stored there), dQ's partial sum of the
// first pass written in f32 to a pooled buffer (H x B x 64 ceil(L_q / 64) x D
// floats, dense; T + 64 B rows, jagged) and the second pass's dQ
// accumulators starting from it, then rounded and TMA-stored as with one
// pass. The same shared memory as L_kv = 128 (two stages, 214016 bytes).
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// L_kv = 256, D = Dv = 128: the partial sums' buffer is
// B x ceil(L_q / 64) x 64 x H x D floats (16384 = 64 x 2 x 128), the
// kernel's last argument, freed after the launch.
// CHECK-LABEL: func.func @kv256(
// CHECK-DAG: %[[B:.*]] = memref.dim %{{.*}}, %c0 : memref<?x?x2x128xbf16>
// CHECK-DAG: %[[L:.*]] = memref.dim %{{.*}}, %c1 : memref<?x?x2x128xbf16>
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[L]], %c64
// CHECK: %[[BT:.*]] = arith.muli %[[B]], %[[TILES]]
// CHECK: %[[FLOATS:.*]] = arith.muli %[[BT]], %c16384
// CHECK: %[[PARTIALS:[^,]*]], %[[READY:.*]] = gpu.alloc async [%{{.*}}] (%[[FLOATS]]) : memref<?xf32>
// CHECK: %[[LAUNCH:.*]] = gpu.launch_func async [%[[READY]]] @fusion_kernels::@kv256_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c214016_i32 args({{.*}}, %[[B]] : index, %[[L]] : index, %c2 : index, %[[PARTIALS]] : memref<?xf32>)
// CHECK: gpu.dealloc async [%[[LAUNCH]]] %[[PARTIALS]] : memref<?xf32>
func.func @kv256(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x256x2x128xbf16>, %v: tensor<?x256x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16>
}

// Jagged q with an operand of its own as the residual, L_kv = 160, D = 64:
// T + 64 B rows of H x D floats; the residual before the partial sums.
// CHECK-LABEL: func.func @jagged_residual(
// CHECK-SAME: %[[JQ:[^:]*]]: memref<?x4x64xbf16>, %{{[^:]*}}: memref<?x160x4x64xbf16>, %{{[^:]*}}: memref<?x160x4x64xbf16>, %[[OFF:[^:]*]]: memref<?xi64>
// CHECK: %[[N:.*]] = memref.dim %[[OFF]], %c0
// CHECK: %[[N1:.*]] = arith.maxui %[[N]], %c1
// CHECK: %[[JB:.*]] = arith.subi %[[N1]], %c1
// CHECK: %[[T:.*]] = memref.dim %[[JQ]], %c0
// CHECK: %[[PAD:.*]] = arith.muli %[[JB]], %c64
// CHECK: %[[ROWS:.*]] = arith.addi %[[T]], %[[PAD]]
// CHECK: %[[JFLOATS:.*]] = arith.muli %[[ROWS]], %c256
// CHECK: %[[JPARTIALS:[^,]*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%[[JFLOATS]]) : memref<?xf32>
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@jagged_residual_kernel0 {{.*}} %[[JB]] : index, %[[T]] : index, %c4 : index, %[[OFF]] : memref<?xi64>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %[[JPARTIALS]] : memref<?xf32>)
// CHECK: gpu.dealloc async
func.func @jagged_residual(%do: tensor<?x4x64xbf16>, %q: tensor<?x4x64xbf16>, %k: tensor<?x160x4x64xbf16>, %v: tensor<?x160x4x64xbf16>, %off: tensor<?xi64>, %r: tensor<?x4x64xbf16>) -> (tensor<?x4x64xbf16>, tensor<?x160x4x64xbf16>, tensor<?x160x4x64xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi64>) residual(%r : tensor<?x4x64xbf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x160x4x64xbf16>, tensor<?x160x4x64xbf16> -> tensor<?x4x64xbf16>, tensor<?x160x4x64xbf16>, tensor<?x160x4x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x64xbf16>, tensor<?x160x4x64xbf16>, tensor<?x160x4x64xbf16>
}

}

// kv256's kernel: per pass K and V (2 key blocks x 2 column blocks each)
// and per tile Q and dO (2 blocks each): 2 x (8 + 4) TMA loads; dQ's one
// block per group TMA-stored once (the last pass), dV and dK per pass
// (2 x 4); the first pass's dQ partial out as 16 8-byte stores per thread,
// read back by the second as 16 8-byte loads.
// PTX-LABEL: .entry kv256_kernel0(
// PTX-COUNT-16: st.global.v2.b32
// PTX-NOT: st.global.v2.b32
// PTX-COUNT-16: ld.global.v2.b32
// PTX-NOT: ld.global.v2.b32
// PTX-LABEL: .entry jagged_residual_kernel0(

// kv256: with the second pass's copy of the consumer's tile loop, ptxas
// spills a little (20 bytes at D = Dv = 128; the one-pass kernel 4).
// PTXAS-DAG: ptxas ok: kv256_kernel0 registers=168 spills={{[0-9]|[1-3][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: jagged_residual_kernel0 registers=168 spills={{[0-9]|[1-3][0-9]}}{{$}}
