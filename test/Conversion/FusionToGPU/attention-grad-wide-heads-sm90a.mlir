// REQUIRES: ptxas
// The attention backward (fusion.gdpa_grad) on sm_90a with heads past 128
// columns (D or Dv 192, 256): dK [64 keys, D] and dV [64 keys, Dv] do not
// fit in one warpgroup's registers beside S^T and dP^T. The keys go 64 per
// pass (K and V of 128 keys beside a stage do not fit), dQ's partial sums
// through global memory past 64 keys, and two consumer warpgroups share a
// pass's keys by role (roleGroups): the value group computes S^T, P^T,
// dV [64, Dv] and dQ, the key group S^T, dP^T, dS^T (into shared memory)
// and dK [64, D], each walking the tiles once a pass of keys. With a
// residual of its own (copied into the staging blocks) the kernel keeps
// the column passes instead: one consumer warpgroup walking the tiles once
// per 128 columns of dK and dV (column pass p accumulates their columns
// [128 p, 128 p + 128), recomputing S^T and dP^T over the whole D and Dv,
// and computes dQ's column blocks of that range).
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=STORES < %t.ptx
// RUN: FileCheck %s --check-prefix=MMA < %t.ptx
// RUN: FileCheck %s --check-prefix=WIDE < %t.ptx
// RUN: FileCheck %s --check-prefix=SYNC < %t.ptx

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// D = Dv = 256, L_kv = 128: two passes of 64 keys; the two role groups
// (384 threads); K, V 64 KB, two stages of Q, dO (128 KB), the dS^T of two
// tile parities (16 KB) and a staging block a group (16 KB): 230400 bytes.
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 2 passes of 64 keys over the query tiles (L_kv 128; dQ's partial sums in f32 through global memory), 2 consumer warpgroups of 64 keys ({{.*}}); D 256, Dv 256: both warpgroups on the same keys, one computing P^T, dV and dQ, the other dS^T and dK (each walking the tiles once a pass of keys, dQ staged a 64-column block at a time); 2 stages of Q, dO: 230400 bytes
// CHECK-LABEL: func.func @d256(
// CHECK: gpu.alloc async {{.*}} : memref<?xf32>
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@d256_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c230400_i32
func.func @d256(%do: tensor<?x?x2x256xbf16>, %q: tensor<?x?x2x256xbf16>, %k: tensor<?x128x2x256xbf16>, %v: tensor<?x128x2x256xbf16>) -> (tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.0625 : f32}
      : tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16> -> tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16>
}

// D = Dv = 192, L_kv = 100: dV and dK MMAs of N = 192; three stages fit
// (230400 bytes).
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 2 passes of 64 keys over the query tiles (L_kv 100; {{.*}}); D 192, Dv 192: both warpgroups on the same keys, {{.*}}; 3 stages of Q, dO: 230400 bytes
// CHECK-LABEL: func.func @d192(
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@d192_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c230400_i32
func.func @d192(%do: tensor<?x?x2x192xbf16>, %q: tensor<?x?x2x192xbf16>, %k: tensor<?x100x2x192xbf16>, %v: tensor<?x100x2x192xbf16>) -> (tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.1 : f32}
      : tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16> -> tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x192xbf16>, tensor<?x100x2x192xbf16>, tensor<?x100x2x192xbf16>
}

// D = 64, Dv = 256, f16, L_kv = 200: four passes of 64 keys; dV of N = 256
// in the value group, dK of N = 64 in the key group.
// PLAN: remark: attention backward kernel on sm_90a: units (batch, head) in 4 passes of 64 keys over the query tiles (L_kv 200; {{.*}}); D 64, Dv 256: both warpgroups on the same keys, {{.*}}; 3 stages of Q, dO: 197632 bytes
// CHECK-LABEL: func.func @d64_dv256(
// CHECK: gpu.launch_func async {{.*}} @fusion_kernels::@d64_dv256_kernel0 {{.*}} threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c197632_i32
func.func @d64_dv256(%do: tensor<?x?x2x256xf16>, %q: tensor<?x?x2x64xf16>, %k: tensor<?x200x2x64xf16>, %v: tensor<?x200x2x256xf16>) -> (tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<?x?x2x256xf16>, tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16> -> tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16>
  return %dq, %dk, %dv : tensor<?x?x2x64xf16>, tensor<?x200x2x64xf16>, tensor<?x200x2x256xf16>
}

// Jagged q with a residual of its own, D = Dv = 256, L_kv = 256: four
// passes of 64 keys, two column passes each (one consumer warpgroup, 256
// threads); the residual copied per
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

// d256: per pass of keys K and V (4 blocks each) and per tile Q and dO (4
// each): 2 x 16 TMA loads. Stores: dQ's 4 blocks once (the last pass of
// keys; the first writes its partials, 4 blocks x 16 8-byte stores), dV's
// and dK's 4 blocks a pass of keys, 64 columns at a time through the
// group's staging block (LLVM merges the two roles' identical store
// sequences: 4 a pass): 4 + 2 x 4. MMAs a pass of keys: S^T in both groups
// (2 x 16 k-steps of N = 64), dP^T (16), dQ's 4 blocks (4 x 4), dV and dK
// (4 k-steps of N = 256 each). One barrier over both groups a tile and
// role (dS^T written).
// PTX-LABEL: .entry d256_kernel0(
// PTX-COUNT-32: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-NOT: cp.async.bulk.tensor.4d.shared::cluster.global
// STORES-LABEL: .entry d256_kernel0(
// STORES-COUNT-12: cp.async.bulk.tensor.4d.global.shared::cta
// STORES-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// STORES-LABEL: .entry d192_kernel0(
// PTX-LABEL: .entry d192_kernel0(

// d192: 2 x (3 + 3 + 3 + 3) loads; stores dQ's 3 blocks and 3 a pass for
// dV / dK: 9.
// PTX-COUNT-24: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-NOT: cp.async.bulk.tensor.4d.shared::cluster.global
// STORES-COUNT-9: cp.async.bulk.tensor.4d.global.shared::cta
// STORES-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// STORES-LABEL: .entry d64_dv256_kernel0(
// PTX-LABEL: .entry d64_dv256_kernel0(

// d64_dv256: 4 x (1 + 4 + 1 + 4) loads; stores a pass of keys dV's 4
// blocks (dK's one merged with dV's first), dQ's one block once: 17.
// PTX-COUNT-40: cp.async.bulk.tensor.4d.shared::cluster.global
// PTX-NOT: cp.async.bulk.tensor.4d.shared::cluster.global
// STORES-COUNT-17: cp.async.bulk.tensor.4d.global.shared::cta
// STORES-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// STORES-LABEL: .entry jagged_residual_kernel0(
// PTX-LABEL: .entry jagged_residual_kernel0(

// The roles' MMAs (d256): 2 x (16 + 16 + 16 + 16) of N = 64 and 2 x (4 +
// 4) of N = 256 (dV and dK whole, WIDE); no N = 128 (the column passes'
// width).
// MMA-LABEL: .entry d256_kernel0(
// MMA-COUNT-128: wgmma.mma_async.sync.aligned.m64n64k16
// MMA-NOT: wgmma.mma_async.sync.aligned.m64n64k16
// MMA-NOT: wgmma.mma_async.sync.aligned.m64n128k16
// MMA-LABEL: .entry d192_kernel0(
// MMA-LABEL: .entry d64_dv256_kernel0(
// d64_dv256 a pass of keys: S^T in both groups (2 x 4), dP^T over Dv = 256
// (16), dQ's block (4), dK (4, N = 64); dV (4, N = 256): 4 x 32 of N = 64.
// MMA-COUNT-128: wgmma.mma_async.sync.aligned.m64n64k16
// MMA-NOT: wgmma.mma_async.sync.aligned.m64n64k16
// MMA-LABEL: .entry jagged_residual_kernel0(
// WIDE-LABEL: .entry d256_kernel0(
// WIDE-COUNT-16: wgmma.mma_async.sync.aligned.m64n256k16
// WIDE-NOT: wgmma.mma_async.sync.aligned.m64n256k16
// WIDE-LABEL: .entry d192_kernel0(

// The role groups meet only at dS^T's mbarriers: no named barrier over both
// groups (bar.sync 3, 256: each group's bar.sync sites would differ, which
// compute-sanitizer's synccheck reports as divergence).
// SYNC-LABEL: .entry d256_kernel0(
// SYNC-NOT: bar.sync{{[[:space:]]+}}3, 256
// SYNC: .entry jagged_residual_kernel0(

// The role groups run 384 threads (168 registers at launch, the consumers
// 240 after setmaxnreg): the value group's dV beside a dQ block spills a
// little; the column passes' kernel (256 threads) 248 registers.
// PTXAS-DAG: ptxas ok: d256_kernel0 registers=168 spills={{[0-9]|[1-5][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: d192_kernel0 registers=168 spills={{[0-9]|[1-5][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: d64_dv256_kernel0 registers=168 spills={{[0-9]|[1-5][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: jagged_residual_kernel0 registers=248 spills={{[0-9]|[1-9][0-9]}}{{$}}
