// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// Round trip of fusion.rope: Llama's q (heads of 128, the tables per token,
// dynamic tokens), GPT-J's interleaved pairs, GPT-NeoX's partial rotary
// dimension with one table for every batch.

// CHECK-LABEL: func.func @llama_q
// CHECK: fusion.rope %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
func.func @llama_q(%x: tensor<?x4096xbf16>, %c: tensor<?x128xbf16>, %s: tensor<?x128xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// CHECK-LABEL: func.func @gptj_k
// CHECK: fusion.rope %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 256 : i64, interleaved} : tensor<2x7x4096xf16>, tensor<2x7x64xf16> -> tensor<2x7x4096xf16>
func.func @gptj_k(%x: tensor<2x7x4096xf16>, %c: tensor<2x7x64xf16>, %s: tensor<2x7x64xf16>) -> tensor<2x7x4096xf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 256 : i64, interleaved} : tensor<2x7x4096xf16>, tensor<2x7x64xf16> -> tensor<2x7x4096xf16>
  return %y : tensor<2x7x4096xf16>
}

// CHECK-LABEL: func.func @neox_partial
// CHECK: fusion.rope %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 128 : i64} : tensor<4x?x2048xf32>, tensor<1x?x32xf32> -> tensor<4x?x2048xf32>
func.func @neox_partial(%x: tensor<4x?x2048xf32>, %c: tensor<1x?x32xf32>, %s: tensor<1x?x32xf32>) -> tensor<4x?x2048xf32> {
  %y = fusion.rope %x, %c, %s {head_dim = 128 : i64} : tensor<4x?x2048xf32>, tensor<1x?x32xf32> -> tensor<4x?x2048xf32>
  return %y : tensor<4x?x2048xf32>
}

// The tokens flattened, per-position tables [L, R] (row m reads m mod L).
// CHECK-LABEL: func.func @positions
// CHECK: fusion.rope %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<2048x128xbf16> -> tensor<?x4096xbf16>
func.func @positions(%x: tensor<?x4096xbf16>, %c: tensor<2048x128xbf16>, %s: tensor<2048x128xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.rope %x, %c, %s {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<2048x128xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
