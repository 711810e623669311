// REQUIRES: ptxas
// The sm_100a (tcgen05) attention backward with keys past 128: two passes
// of 128 keys over each unit's query tiles of 128 tokens, as on sm_90a
// (attention-grad-long-kv-sm90a.mlir). The MMA warp waits for each pass's K
// and V and commits them back after it; the epilogue warpgroup writes the
// first pass's dQ rows in f32 (a row per thread, its D floats in 16-byte
// stores) instead of staging them, and the second pass adds them to the
// rows it reads from tensor memory before the rounding; dV and dK of each
// pass go to its 128 keys. The partial sums' buffer has B x 128
// ceil(L_q / 128) rows of H x D floats (32768 = 128 x 2 x 128). Never
// executed (no B200 here).
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS

module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @kv256(
// CHECK-DAG: %[[B:.*]] = memref.dim %{{.*}}, %c0 : memref<?x?x2x128xbf16>
// CHECK-DAG: %[[L:.*]] = memref.dim %{{.*}}, %c1 : memref<?x?x2x128xbf16>
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[L]], %c128
// CHECK: %[[BT:.*]] = arith.muli %[[B]], %[[TILES]]
// CHECK: %[[FLOATS:.*]] = arith.muli %[[BT]], %c32768
// CHECK: %[[PARTIALS:[^,]*]], %[[READY:.*]] = gpu.alloc async [%{{.*}}] (%[[FLOATS]]) : memref<?xf32>
// CHECK: %[[LAUNCH:.*]] = gpu.launch_func async [%[[READY]]] @fusion_kernels::@kv256_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{.*}} args({{.*}}, %[[B]] : index, %[[L]] : index, %c2 : index, %[[PARTIALS]] : memref<?xf32>)
// CHECK: gpu.dealloc async [%[[LAUNCH]]] %[[PARTIALS]] : memref<?xf32>
func.func @kv256(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x256x2x128xbf16>, %v: tensor<?x256x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x256x2x128xbf16>, tensor<?x256x2x128xbf16>
}
}

// Per pass 64 MMAs (16 dP^T, 16 S^T, 8 dV, 8 dK, 16 dQ) and four commits
// (sFull, empty[s], dqFull, kvEmpty); per pass K, V (4 blocks each) and
// per tile Q, dO (4 each) loaded; dQ stored once (4 blocks, the last pass),
// dV and dK per pass (4 each); the first pass's dQ rows out as 32 16-byte
// stores per thread (4 x 32 columns), read back by the second as 32 loads.
// PTX-LABEL: .entry kv256_kernel0(
// PTX-COUNT-128: tcgen05.mma.cta_group::1
// PTX-NOT: tcgen05.mma.cta_group::1
// PTX-COUNT-32: st.global.v4.b32
// PTX-NOT: st.global.v4.b32
// PTX-COUNT-32: ld.global.v2.b64
// PTX-NOT: ld.global
// PTXAS: ptxas ok: kv256_kernel0 registers={{[0-9]+}} spills=0{{$}}
