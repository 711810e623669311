// REQUIRES: ptxas
// The attention backward (fusion.gdpa_grad) on sm_90a with heads past 128
// columns (D or Dv 192, 256): dK [64 keys, D] and dV [64 keys, Dv] do not
// fit in one warpgroup's registers, so each pass of keys walks the unit's
// query tiles once per 128 columns of them (column pass p accumulates dK's
// and dV's columns [128 p, 128 p + 128), recomputing S^T and dP^T over the
// whole D and Dv, and computes dQ's column blocks of that range), and the
// keys go 64 per pass (one consumer warpgroup: K and V of 128 keys beside a
// stage do not fit), dQ's partial sums through global memory past 64 keys.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=MMA < %t.ptx

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// D = Dv = 256, L_kv = 128: two passes of 64 keys, two column passes each;
// one consumer warpgroup (256 threads); P^T stays in registers, so its
// buffer goes and two stages fit (230400 bytes; with it one).
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 2 passes of 64 keys over the query tiles (L_kv 128; dQ's partial sums in f32 through global memory), 1 consumer warpgroup of 64 keys ({{.*}}); D 256, Dv 256: each pass of keys walks the tiles 2 times, dK's and dV's columns 128 at a time (S^T and dP^T recomputed, dQ's column blocks of the pass's columns); 2 stages of Q, dO: 230400 bytes
// CHECK-LABEL: func.func @d256(
// CHECK: gpu.alloc async {{.*}} : memref<?xf32>
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@d256_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{ *}}dynamic_shared_memory_size %c230400_i32
func.func @d256(%do: tensor<?x?x2x256xbf16>, %q: tensor<?x?x2x256xbf16>, %k: tensor<?x128x2x256xbf16>, %v: tensor<?x128x2x256xbf16>) -> (tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.0625 : f32}
      : tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16> -> tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16>
}

// D = Dv = 192, L_kv = 100: the second column pass has 64 columns of dK
// and dV (and dQ's third block); three stages fit (230400 bytes).
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 2 passes of 64 keys over the query tiles (L_kv 100; {{.*}}); D 192, Dv 192: each pass of keys walks the tiles 2 times, {{.*}}; 3 stages of Q, dO: 230400 bytes
// CHECK-LABEL: func.func @d192(
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@d192_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{ *}}dynamic_shared_memory_size %c230400_i32
func.func @d192(%do: tensor<?x?x2x192xbf16>, %q: tensor<?x?x2x192xbf16>, %k: tensor<?x100x2x192xbf16>, %v: tensor<?x100x2x192xbf16>) -> (tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.1 : f32}
      : tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16> -> tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16>
}

// D = 64, Dv = 256, f16, L_kv = 200: four passes of 64 keys; the second
// column pass has dV's columns only (no dK, no dQ block).
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 4 passes of 64 keys over the query tiles (L_kv 200; {{.*}}); D 64, Dv 256: each pass of keys walks the tiles 2 times, {{.*}}; 3 stages of Q, dO: 197632 bytes
// CHECK-LABEL: func.func @d64_dv256(
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@d64_dv256_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{ *}}dynamic_shared_memory_size %c197632_i32
func.func @d64_dv256(%do: tensor<?x?x2x256xf16>, %q: tensor<?x?x2x64xf16>, %k: tensor<?x200x2x64xf16>, %v: tensor<?x200x2x256xf16>) -> (tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<?x?x2x256xf16>, tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16> -> tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16>
  return %dq, %dk, %dv : tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16>
}

// Jagged q with a residual of its own, D = Dv = 256, L_kv = 256: four
// passes of 64 keys, two column passes each; the residual copied per
// column pass for the pass's dQ blocks; P^T through its shared buffer
// (as for every jagged kernel with such a residual): one stage.
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 4 passes of 64 keys over the query tiles (L_kv 256; {{.*}}); D 256, Dv 256: {{.*}}; 1 stage of Q, dO: 173056 bytes
// CHECK-LABEL: func.func @jagged_residual(
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@jagged_residual_kernel0 {{.*}} threads in (%c256, %c1, %c1) {{ *}}dynamic_shared_memory_size %c173056_i32
func.func @jagged_residual(%do: tensor<?x2x256xbf16>, %q: tensor<?x2x256xbf16>, %k: tensor<?x256x2x256xbf16>, %v: tensor<?x256x2x256xbf16>, %off: tensor<?xi32>, %r: tensor<?x2x256xbf16>) -> (tensor<?x2x256xbf16>, tensor<?x256x2x256xbf16>, tensor<?x256x2x256xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?xi32>) residual(%r : tensor<?x2x256xbf16>) {activation = #fusion.activation<gelu>, scale = 0.0625 : f32}
      : tensor<?x2x256xbf16>, tensor<?x2x256xbf16>, tensor<?x256x2x256xbf16>, tensor<?x256x2x256xbf16> -> tensor<?x2x256xbf16>, tensor<?x256x2x256xbf16>, tensor<?x256x2x256xbf16>
  return %dq, %dk, %dv : tensor<?x2x256xbf16>, tensor<?x256x2x256xbf16>, tensor<?x256x2x256xbf16>
}

}

// d256: per pass of keys K and V (4 blocks each), then per column pass
// and tile Q and dO (4 blocks each): 2 x (8 + 2 x 8) TMA loads; dV and dK
// per pass of keys and column pass (2 + 2 blocks: 16), dQ's blocks of each
// column pass once, in the last pass of keys (2 x 2): 20 TMA stores. Per
// pass of keys and column pass: S^T and dP^T over 256 columns (2 x 16
// k-steps of N = 64), dQ's two blocks (2 x 4), dV and dK of 128 columns
// (2 x 4 k-steps of N = 128). The first pass's dQ partials out (2 column
// passes x 2 blocks x 16 8-byte stores), read back by the second.
// PTX-LABEL: .entry d256_kernel0(
// PTX-COUNT-48: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-NOT: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-COUNT-20: cp.async.bulk.tensor.4d.global.shared::cta
// PTX-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// PTX-LABEL: .entry d192_kernel0(

// d192: per pass of keys K, V (3 blocks each) and per column pass Q, dO
// (3 each): 2 x (6 + 2 x 6) loads; stores per pass of keys 2 + 2 (column
// pass 0) and 1 + 1 (pass 1), dQ's 3 blocks once: 15.
// PTX-COUNT-36: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-NOT: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-COUNT-15: cp.async.bulk.tensor.4d.global.shared::cta
// PTX-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// PTX-LABEL: .entry d64_dv256_kernel0(

// d64_dv256: 4 x (1 + 4 + 2 x (1 + 4)) loads; per pass of keys dV 2 + 2
// and dK 1 (column pass 0 only), dQ's one block once: 21 stores.
// PTX-COUNT-60: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-NOT: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-COUNT-21: cp.async.bulk.tensor.4d.global.shared::cta
// PTX-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// PTX-LABEL: .entry jagged_residual_kernel0(

// d64_dv256's MMAs per pass of keys: column pass 0 S^T (4 k-steps of
// N = 64), dP^T over Dv = 256 (16), dQ's block (4), dK (4, N = 64) and dV
// (4, N = 128); column pass 1, dV's columns only, S^T (4) and dV (4, N =
// 128): no dP^T, dS^T or dQ there. 4 x 32 of N = 64, 4 x 8 of N = 128.
// MMA-LABEL: .entry d64_dv256_kernel0(
// MMA-COUNT-128: wgmma.mma_async.sync.aligned.m64n64k16
// MMA-NOT: wgmma.mma_async.sync.aligned.m64n64k16
// MMA-LABEL: .entry jagged_residual_kernel0(

// With the column passes' copies of the consumer's tile loop ptxas spills
// a little at 248 registers (the one-pass D = 128 kernels 4-20 bytes at
// 168; the jagged kernel with a residual of its own keeps P^T in shared
// memory and spills most).
// PTXAS-DAG: ptxas ok: d256_kernel0 registers=248 spills={{[0-9]|[1-5][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: d192_kernel0 registers=248 spills={{[0-9]|[1-5][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: d64_dv256_kernel0 registers=248 spills={{[0-9]|[1-5][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: jagged_residual_kernel0 registers=248 spills={{[0-9]|[1-9][0-9]}}{{$}}
