// RUN: fusion-opt %s --fusion-raise-linalg -split-input-file | FileCheck %s

// Test that fusion-raise-linalg folds a layer's affine ops into the layer: a
// bias added after a biasless, single-use fusion.matmul (in fusion or in f32
// linalg) becomes the matmul's bias; a weight multiplied into a weightless
// norm's output (and a bias added to a biasless LayerNorm's) becomes the
// norm's. Negative cases after each group: the IR stays unchanged.

// The PyTorch form: a broadcasting fusion.add of an [N] bias, dynamic M.
// CHECK-LABEL: func.func @add_vector
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16>, %[[W:.*]]: tensor<128x64xbf16>, %[[B:.*]]: tensor<128xbf16>)
// CHECK: %[[Y:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[B]] : tensor<128xbf16>) {transpose_rhs} : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
// CHECK-NOT: fusion.add
// CHECK: return %[[Y]]
func.func @add_vector(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>, %b: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %h = fusion.matmul %x, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  %y = fusion.add %h, %b : tensor<?x128xbf16>, tensor<128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// A keep-dim bias [1, N] of another element type is collapsed to [N].
// CHECK-LABEL: func.func @add_keepdim
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xbf16>, %[[W:.*]]: tensor<16x32xbf16>, %[[B:.*]]: tensor<1x32xf32>)
// CHECK: %[[BV:.*]] = tensor.collapse_shape %[[B]] {{\[\[}}0, 1]] : tensor<1x32xf32> into tensor<32xf32>
// CHECK: %[[Y:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[BV]] : tensor<32xf32>) : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
// CHECK: return %[[Y]]
func.func @add_keepdim(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<1x32xf32>) -> tensor<8x32xbf16> {
  %h = fusion.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %y = fusion.add %h, %b : tensor<8x32xbf16>, tensor<1x32xf32>
  return %y : tensor<8x32xbf16>
}

// -----

// A bias broadcast explicitly to [M, N] by linalg.broadcast, added on either
// side: its [N] input becomes the bias.
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[Y1:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[B]] : tensor<32xf32>)
// CHECK: %[[Y2:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[B]] : tensor<32xf32>)
// CHECK-NOT: fusion.add
// CHECK: return %[[Y1]], %[[Y2]]
func.func @add_broadcast(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %e = tensor.empty() : tensor<8x32xf32>
  %bb = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e : tensor<8x32xf32>) dimensions = [0]
  %h1 = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y1 = fusion.add %h1, %bb : tensor<8x32xf32>
  %h2 = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y2 = fusion.add %bb, %h2 : tensor<8x32xf32>
  return %y1, %y2 : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// torch-mlir's aten.linear in f32 linalg: a transposed linalg.matmul, then a
// linalg.generic adding the bias read as (d0, d1) -> (d1).
// CHECK-LABEL: func.func @linalg_generic_bias
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[Y:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[B]] : tensor<32xf32>) {transpose_rhs}
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @linalg_generic_bias(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<8x16xf32>, tensor<32x16xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %c, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// linalg.add of the product and a linalg.broadcast of the bias.
// CHECK-LABEL: func.func @linalg_add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[Y:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[B]] : tensor<32xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
func.func @linalg_add_broadcast(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  %bb = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e : tensor<8x32xf32>) dimensions = [0]
  %y = linalg.add ins(%bb, %h : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// The addmm form: a linalg.matmul accumulating into the broadcast bias.
// CHECK-LABEL: func.func @linalg_matmul_bias_init
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[Y:.*]] = fusion.matmul %[[X]], %[[W]] bias(%[[B]] : tensor<32xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
func.func @linalg_matmul_bias_init(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %bb = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e : tensor<8x32xf32>) dimensions = [0]
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%bb : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Not applied: the product has another user, so it is stored anyway.
// CHECK-LABEL: func.func @product_used_twice
// CHECK: %[[H:.*]] = fusion.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
// CHECK: fusion.add %[[H]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>
// CHECK: return
func.func @product_used_twice(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %h = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = fusion.add %h, %b : tensor<8x32xf32>, tensor<32xf32>
  return %y, %h : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Not applied: the matmul already has a bias.
// CHECK-LABEL: func.func @already_biased
// CHECK: %[[H:.*]] = fusion.matmul %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<32xf32>)
// CHECK: fusion.add %[[H]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>
func.func @already_biased(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %c: tensor<32xf32>) -> tensor<8x32xf32> {
  %h = fusion.matmul %x, %w bias(%b : tensor<32xf32>) : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = fusion.add %h, %c : tensor<8x32xf32>, tensor<32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Not applied: one value per row ([M, 1]) or a scalar ([1]) is not a column
// bias, and neither is a residual [M, N].
// CHECK-LABEL: func.func @not_column_vectors
// CHECK-COUNT-3: fusion.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
// CHECK-NOT: bias(
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<8x1xf32>
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<1xf32>
// CHECK: fusion.add %{{.*}}, %{{.*}} : tensor<8x32xf32>
func.func @not_column_vectors(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %r: tensor<8x1xf32>, %s: tensor<1xf32>,
                              %res: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %h1 = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %h2 = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %h3 = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y1 = fusion.add %h1, %r : tensor<8x32xf32>, tensor<8x1xf32>
  %y2 = fusion.add %h2, %s : tensor<8x32xf32>, tensor<1xf32>
  %y3 = fusion.add %h3, %res : tensor<8x32xf32>
  return %y1, %y2, %y3 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Not applied: a bf16 linalg sum rounds in bf16 (not fusion.add's f32 sum).
// CHECK-LABEL: func.func @linalg_bf16_sum
// CHECK: fusion.matmul %{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
// CHECK: linalg.generic
func.func @linalg_bf16_sum(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xbf16>) -> tensor<8x32xbf16> {
  %e = tensor.empty() : tensor<8x32xbf16>
  %h = fusion.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<8x32xbf16>, tensor<32xbf16>) outs(%e : tensor<8x32xbf16>) {
  ^bb0(%a: bf16, %c: bf16, %o: bf16):
    %s = arith.addf %a, %c : bf16
    linalg.yield %s : bf16
  } -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// -----

// HF LlamaRMSNorm, `weight * rms_norm(x)`, before a linear (dynamic M): the
// mul becomes the norm's weight.
// CHECK-LABEL: func.func @rms_mul_weight
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16>, %[[G:.*]]: tensor<64xbf16>, %[[W:.*]]: tensor<128x64xbf16>)
// CHECK: %[[N:.*]] = fusion.rms_norm %[[X]] weight(%[[G]] : tensor<64xbf16>) {epsilon = 9.99999997E-7 : f32} : tensor<?x64xbf16> -> tensor<?x64xbf16>
// CHECK-NOT: fusion.mul
// CHECK: fusion.matmul %[[N]], %[[W]] {transpose_rhs}
func.func @rms_mul_weight(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16>) -> tensor<?x128xbf16> {
  %n0 = fusion.rms_norm %x {epsilon = 1.0e-06 : f32} : tensor<?x64xbf16> -> tensor<?x64xbf16>
  %n = fusion.mul %n0, %g : tensor<?x64xbf16>, tensor<64xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// A LayerNorm written as normalize, scale, shift (the statistics unused; the
// weight as [1, N]): one fusion.layer_norm with weight and bias.
// CHECK-LABEL: func.func @ln_mul_add
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[G:.*]]: tensor<1x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[GV:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0, 1]] : tensor<1x32xf32> into tensor<32xf32>
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = fusion.layer_norm %[[X]] weight(%[[GV]] : tensor<32xf32>) bias(%[[B]] : tensor<32xf32>)
// CHECK-NOT: fusion.mul
// CHECK-NOT: fusion.add
// CHECK: return %[[Y]]
func.func @ln_mul_add(%x: tensor<8x32xf32>, %g: tensor<1x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %n, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %s = fusion.mul %n, %g : tensor<8x32xf32>, tensor<1x32xf32>
  %y = fusion.add %s, %b : tensor<8x32xf32>, tensor<32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Not applied: a norm that already has a weight, a norm whose rstd is used,
// a LayerNorm that already has a bias, and one value per row ([M, 1]).
// CHECK-LABEL: func.func @norm_affine_not_applied
// CHECK: fusion.rms_norm %{{.*}} weight(
// CHECK-NEXT: fusion.mul
// CHECK: fusion.rms_norm %{{.*}} {epsilon
// CHECK-NEXT: fusion.mul
// CHECK: fusion.layer_norm %{{.*}} bias(
// CHECK-NEXT: fusion.add
// CHECK: fusion.rms_norm %{{.*}} {epsilon
// CHECK-NEXT: fusion.mul %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<8x1xf32>
func.func @norm_affine_not_applied(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %r: tensor<8x1xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %n1 = fusion.rms_norm %x weight(%g : tensor<32xf32>) {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>
  %y1 = fusion.mul %n1, %g : tensor<8x32xf32>, tensor<32xf32>
  %n2, %rstd = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>
  %y2 = fusion.mul %n2, %g : tensor<8x32xf32>, tensor<32xf32>
  %n3, %m, %r3 = fusion.layer_norm %x bias(%g : tensor<32xf32>) {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  %y3 = fusion.add %n3, %g : tensor<8x32xf32>, tensor<32xf32>
  %n4 = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x32xf32> -> tensor<8x32xf32>
  %y4 = fusion.mul %n4, %r : tensor<8x32xf32>, tensor<8x1xf32>
  return %y1, %y2, %rstd, %y3, %y4 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}
