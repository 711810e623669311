// Reference semantics of fusion.rope (each head rotated by its token's
// angles: x cos + rotate_half(x) sin, in f32, rounded once), on the CPU:
// hand values for the halves, the interleaved pairs (GPT-J) and a partial
// rotary dimension (GPT-NeoX); random inputs against Hugging Face's formula
// written with tensor ops (the halves swapped by insert_slice, the tables
// broadcast over the heads), in f32 and bf16, with one table for every batch.
// RUN: fusion-runner %s -e expected --compare=hand --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e hf_rope --compare=fusion_rope --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e hf_rope_bf16 --compare=fusion_rope_bf16 --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e hf_rope_batch --compare=fusion_rope_batch --atol=0 --rtol=0 | FileCheck %s
// The same on the tokens flattened, [B x L, N], with per-position tables
// [L, R] (row m reads table row m mod L):
// RUN: fusion-runner %s -e hf_rope_batch --compare=fusion_rope_positions --atol=0 --rtol=0 | FileCheck %s
// A rotation the other way differs:
// RUN: not fusion-runner %s -e hf_rope --compare=hf_rope_inverse --atol=1e-3 --rtol=1e-3 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// x = [1, 2, 3, 4] per head; cos = [1, 0, 0.5, 2], sin = [0, 1, 1, 0.5]:
// halves  y = [1 - 3*0, 0 - 4*1, 1.5 + 1*1, 8 + 2*0.5] = [1, -4, 2.5, 9];
// pairs   y = [1 - 2*0, 0 + 1*1, 1.5 - 4*1, 8 + 3*0.5] = [1, 1, -2.5, 9.5];
// R = 2 of D = 4, cos = [0.5, 2], sin = [1, -1]:
//         y = [0.5 - 2*1, 4 + 1*(-1), 3, 4] = [-1.5, 3, 3, 4].
func.func @expected() -> (tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %h = arith.constant dense<[[1.0, -4.0, 2.5, 9.0, 1.0, -4.0, 2.5, 9.0]]> : tensor<1x8xf32>
  %p = arith.constant dense<[[1.0, 1.0, -2.5, 9.5]]> : tensor<1x4xf32>
  %r = arith.constant dense<[[-1.5, 3.0, 3.0, 4.0]]> : tensor<1x4xf32>
  return %h, %p, %r : tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}
func.func @hand() -> (tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %x2 = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]]> : tensor<1x8xf32>
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %c = arith.constant dense<[[1.0, 0.0, 0.5, 2.0]]> : tensor<1x4xf32>
  %s = arith.constant dense<[[0.0, 1.0, 1.0, 0.5]]> : tensor<1x4xf32>
  %h = fusion.rope %x2, %c, %s {head_dim = 4 : i64} : tensor<1x8xf32>, tensor<1x4xf32> -> tensor<1x8xf32>
  %p = fusion.rope %x, %c, %s {head_dim = 4 : i64, interleaved} : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
  %cr = arith.constant dense<[[0.5, 2.0]]> : tensor<1x2xf32>
  %sr = arith.constant dense<[[1.0, -1.0]]> : tensor<1x2xf32>
  %r = fusion.rope %x, %cr, %sr {head_dim = 4 : i64} : tensor<1x4xf32>, tensor<1x2xf32> -> tensor<1x4xf32>
  return %h, %p, %r : tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}

// 6 tokens, 3 heads of 8: y = x cos + rotate_half(x) sin, rotate_half(x) =
// [-x[4:8], x[0:4]] per head, cos and sin [6, 8] broadcast over the heads.
func.func @hf_rope(%x: tensor<6x24xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>) -> tensor<6x24xf32> {
  %xh = tensor.expand_shape %x [[0], [1, 2]] output_shape [6, 3, 8] : tensor<6x24xf32> into tensor<6x3x8xf32>
  %lo = tensor.extract_slice %xh[0, 0, 0] [6, 3, 4] [1, 1, 1] : tensor<6x3x8xf32> to tensor<6x3x4xf32>
  %hi = tensor.extract_slice %xh[0, 0, 4] [6, 3, 4] [1, 1, 1] : tensor<6x3x8xf32> to tensor<6x3x4xf32>
  %neg = arith.negf %hi : tensor<6x3x4xf32>
  %e = tensor.empty() : tensor<6x3x8xf32>
  %r0 = tensor.insert_slice %neg into %e[0, 0, 0] [6, 3, 4] [1, 1, 1] : tensor<6x3x4xf32> into tensor<6x3x8xf32>
  %rot = tensor.insert_slice %lo into %r0[0, 0, 4] [6, 3, 4] [1, 1, 1] : tensor<6x3x4xf32> into tensor<6x3x8xf32>
  %cb = linalg.broadcast ins(%cos : tensor<6x8xf32>) outs(%e : tensor<6x3x8xf32>) dimensions = [1]
  %e2 = tensor.empty() : tensor<6x3x8xf32>
  %sb = linalg.broadcast ins(%sin : tensor<6x8xf32>) outs(%e2 : tensor<6x3x8xf32>) dimensions = [1]
  %a = arith.mulf %xh, %cb : tensor<6x3x8xf32>
  %b = arith.mulf %rot, %sb : tensor<6x3x8xf32>
  %y = arith.addf %a, %b : tensor<6x3x8xf32>
  %yf = tensor.collapse_shape %y [[0], [1, 2]] : tensor<6x3x8xf32> into tensor<6x24xf32>
  return %yf : tensor<6x24xf32>
}
func.func @fusion_rope(%x: tensor<6x24xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>) -> tensor<6x24xf32> {
  %y = fusion.rope %x, %cos, %sin {head_dim = 8 : i64} : tensor<6x24xf32>, tensor<6x8xf32> -> tensor<6x24xf32>
  return %y : tensor<6x24xf32>
}
// Negative: the inverse rotation (sin negated).
func.func @hf_rope_inverse(%x: tensor<6x24xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>) -> tensor<6x24xf32> {
  %ns = arith.negf %sin : tensor<6x8xf32>
  %y = fusion.rope %x, %cos, %ns {head_dim = 8 : i64} : tensor<6x24xf32>, tensor<6x8xf32> -> tensor<6x24xf32>
  return %y : tensor<6x24xf32>
}

// bf16: the same in f32 from the widened inputs, rounded once.
func.func @hf_rope_bf16(%x: tensor<5x16xbf16>, %cos: tensor<5x8xbf16>, %sin: tensor<5x8xbf16>) -> tensor<5x16xbf16> {
  %xf = arith.extf %x : tensor<5x16xbf16> to tensor<5x16xf32>
  %cf = arith.extf %cos : tensor<5x8xbf16> to tensor<5x8xf32>
  %sf = arith.extf %sin : tensor<5x8xbf16> to tensor<5x8xf32>
  %xh = tensor.expand_shape %xf [[0], [1, 2]] output_shape [5, 2, 8] : tensor<5x16xf32> into tensor<5x2x8xf32>
  %lo = tensor.extract_slice %xh[0, 0, 0] [5, 2, 4] [1, 1, 1] : tensor<5x2x8xf32> to tensor<5x2x4xf32>
  %hi = tensor.extract_slice %xh[0, 0, 4] [5, 2, 4] [1, 1, 1] : tensor<5x2x8xf32> to tensor<5x2x4xf32>
  %neg = arith.negf %hi : tensor<5x2x4xf32>
  %e = tensor.empty() : tensor<5x2x8xf32>
  %r0 = tensor.insert_slice %neg into %e[0, 0, 0] [5, 2, 4] [1, 1, 1] : tensor<5x2x4xf32> into tensor<5x2x8xf32>
  %rot = tensor.insert_slice %lo into %r0[0, 0, 4] [5, 2, 4] [1, 1, 1] : tensor<5x2x4xf32> into tensor<5x2x8xf32>
  %cb = linalg.broadcast ins(%cf : tensor<5x8xf32>) outs(%e : tensor<5x2x8xf32>) dimensions = [1]
  %e2 = tensor.empty() : tensor<5x2x8xf32>
  %sb = linalg.broadcast ins(%sf : tensor<5x8xf32>) outs(%e2 : tensor<5x2x8xf32>) dimensions = [1]
  %a = arith.mulf %xh, %cb : tensor<5x2x8xf32>
  %b = arith.mulf %rot, %sb : tensor<5x2x8xf32>
  %y = arith.addf %a, %b : tensor<5x2x8xf32>
  %yf = tensor.collapse_shape %y [[0], [1, 2]] : tensor<5x2x8xf32> into tensor<5x16xf32>
  %r = arith.truncf %yf : tensor<5x16xf32> to tensor<5x16xbf16>
  return %r : tensor<5x16xbf16>
}
func.func @fusion_rope_bf16(%x: tensor<5x16xbf16>, %cos: tensor<5x8xbf16>, %sin: tensor<5x8xbf16>) -> tensor<5x16xbf16> {
  %y = fusion.rope %x, %cos, %sin {head_dim = 8 : i64} : tensor<5x16xbf16>, tensor<5x8xbf16> -> tensor<5x16xbf16>
  return %y : tensor<5x16xbf16>
}

// [B 2, L 3, 2 heads of 4] with the tables [1, L, 4]: one for both batches.
func.func @hf_rope_batch(%x: tensor<2x3x8xf32>, %cos: tensor<1x3x4xf32>, %sin: tensor<1x3x4xf32>) -> tensor<2x3x8xf32> {
  %xh = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [2, 3, 2, 4] : tensor<2x3x8xf32> into tensor<2x3x2x4xf32>
  %lo = tensor.extract_slice %xh[0, 0, 0, 0] [2, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x4xf32> to tensor<2x3x2x2xf32>
  %hi = tensor.extract_slice %xh[0, 0, 0, 2] [2, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x4xf32> to tensor<2x3x2x2xf32>
  %neg = arith.negf %hi : tensor<2x3x2x2xf32>
  %e = tensor.empty() : tensor<2x3x2x4xf32>
  %r0 = tensor.insert_slice %neg into %e[0, 0, 0, 0] [2, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x2xf32> into tensor<2x3x2x4xf32>
  %rot = tensor.insert_slice %lo into %r0[0, 0, 0, 2] [2, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x2xf32> into tensor<2x3x2x4xf32>
  %c2 = tensor.collapse_shape %cos [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
  %s2 = tensor.collapse_shape %sin [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
  %cb = linalg.broadcast ins(%c2 : tensor<3x4xf32>) outs(%e : tensor<2x3x2x4xf32>) dimensions = [0, 2]
  %e2 = tensor.empty() : tensor<2x3x2x4xf32>
  %sb = linalg.broadcast ins(%s2 : tensor<3x4xf32>) outs(%e2 : tensor<2x3x2x4xf32>) dimensions = [0, 2]
  %a = arith.mulf %xh, %cb : tensor<2x3x2x4xf32>
  %b = arith.mulf %rot, %sb : tensor<2x3x2x4xf32>
  %y = arith.addf %a, %b : tensor<2x3x2x4xf32>
  %yf = tensor.collapse_shape %y [[0], [1], [2, 3]] : tensor<2x3x2x4xf32> into tensor<2x3x8xf32>
  return %yf : tensor<2x3x8xf32>
}
func.func @fusion_rope_batch(%x: tensor<2x3x8xf32>, %cos: tensor<1x3x4xf32>, %sin: tensor<1x3x4xf32>) -> tensor<2x3x8xf32> {
  %y = fusion.rope %x, %cos, %sin {head_dim = 4 : i64} : tensor<2x3x8xf32>, tensor<1x3x4xf32> -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

func.func @fusion_rope_positions(%x: tensor<2x3x8xf32>, %cos: tensor<1x3x4xf32>, %sin: tensor<1x3x4xf32>) -> tensor<2x3x8xf32> {
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  %c2 = tensor.collapse_shape %cos [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
  %s2 = tensor.collapse_shape %sin [[0, 1], [2]] : tensor<1x3x4xf32> into tensor<3x4xf32>
  %y2 = fusion.rope %x2, %c2, %s2 {head_dim = 4 : i64} : tensor<6x8xf32>, tensor<3x4xf32> -> tensor<6x8xf32>
  %y = tensor.expand_shape %y2 [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}
