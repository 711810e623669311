// fusion.rope gets the row family's element-wise kernel: the input viewed
// flat in 16-byte vectors where a vector stays inside a head and a half of
// its rotary dimension (whole pairs when interleaved), else elements; each
// vector reads its partner vector (R / 2 columns away; interleaved pairs are
// swapped in registers) and its token's cos and sin at its head column, the
// table row being the input row modulo the tables' rows (one table for every
// batch); x cos + sign partner sin in f32, rounded once on the store;
// columns past the rotary dimension pass through.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=KERNEL < %t.mlir
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Llama's q: 32 heads of 128, bf16, tables per token: 512 vectors per row;
// input, cos, sin, output, the rows and the tables' rows.
// CHECK-LABEL: func.func @llama_q(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x4096xbf16>, %[[C:[^:]*]]: memref<?x128xbf16>, %[[S:[^:]*]]: memref<?x128xbf16>, %[[Y:[^:]*]]: memref<?x4096xbf16>)
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG: %[[TROWS:.*]] = memref.dim %[[C]], %c0
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@llama_q_kernel0 blocks in (%{{.*}}, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %{{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %[[ROWS]] : index, %[[TROWS]] : index)
// The kernel: the partner vector 64 columns away, one select of its sign.
// KERNEL-LABEL: gpu.func @llama_q_kernel0(
// KERNEL: vector.load {{.*}} : memref<?xbf16>, vector<8xbf16>
// KERNEL: arith.select %{{.*}}, %cst{{.*}}, %cst{{.*}} : f32
func.func @llama_q(%x: tensor<?x4096xbf16>, %c: tensor<?x128xbf16>, %s: tensor<?x128xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// GPT-J's k: pairs (2i, 2i + 1) of a head of 256, 64 rotated columns, f16,
// tables [1, L, 64] for a [B, L, 4096] input: the pairs swapped in the vector.
// CHECK-LABEL: func.func @gptj_k(
// KERNEL-LABEL: gpu.func @gptj_k_kernel0(
// KERNEL: vector.shuffle %{{.*}}, %{{.*}} [1, 0, 3, 2, 5, 4, 7, 6] : vector<8xf32>, vector<8xf32>
func.func @gptj_k(%x: tensor<2x?x4096xf16>, %c: tensor<1x?x64xf16>, %s: tensor<1x?x64xf16>) -> tensor<2x?x4096xf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 256 : i64, interleaved} : tensor<2x?x4096xf16>, tensor<1x?x64xf16> -> tensor<2x?x4096xf16>
  return %y : tensor<2x?x4096xf16>
}

// GPT-NeoX's partial rotary: a quarter of heads of 80 (R = 20, halves of 10
// columns), f32: elements, not vectors.
// CHECK-LABEL: func.func @neox_partial(
// KERNEL-LABEL: gpu.func @neox_partial_kernel0(
// KERNEL: vector.load {{.*}} : memref<?xf32>, vector<1xf32>
func.func @neox_partial(%x: tensor<?x2560xf32>, %c: tensor<?x20xf32>, %s: tensor<?x20xf32>) -> tensor<?x2560xf32> {
  %y = fusion.rope %x, %c, %s {head_dim = 80 : i64} : tensor<?x2560xf32>, tensor<?x20xf32> -> tensor<?x2560xf32>
  return %y : tensor<?x2560xf32>
}

// Interleaved over elements (a head of 6: no whole vector of pairs).
// CHECK-LABEL: func.func @pairs_odd_head(
func.func @pairs_odd_head(%x: tensor<?x18xbf16>, %c: tensor<?x6xbf16>, %s: tensor<?x6xbf16>) -> tensor<?x18xbf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 6 : i64, interleaved} : tensor<?x18xbf16>, tensor<?x6xbf16> -> tensor<?x18xbf16>
  return %y : tensor<?x18xbf16>
}
}

// PTXAS-DAG: ptxas ok: llama_q_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: gptj_k_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: neox_partial_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: pairs_odd_head_kernel0 registers={{[0-9]+}} spills=0
