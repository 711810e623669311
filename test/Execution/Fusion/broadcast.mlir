// Reference semantics of the broadcasting fusion.add and fusion.mul (rhs
// aligned at the innermost dimension, size-1 dimensions repeated; f32
// arithmetic, rounded once to lhs's element type) and of fusion.matmul's
// bias, on the CPU: hand values, then explicit linalg.broadcast + arith on
// random inputs.
// RUN: fusion-runner %s -e expected --compare=hand --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e explicit_add_vector --compare=fusion_add_vector --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e explicit_mul_rows --compare=fusion_mul_rows --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e explicit_add_mixed --compare=fusion_add_mixed --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e explicit_mul_same --compare=fusion_mul_same --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e explicit_linear --compare=fusion_linear --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e explicit_linear_bf16 --compare=fusion_linear_bf16 --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e explicit_mul_rows --compare=fusion_mul_cols | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Hand values: x = [[1, 2, 3], [4, 5, 6]]; x + [10, 20, 30]; x * [[2], [-1]]
// (one value per row); x * [[0.5, 1, 2]] ([1, N]); x @ I + bias.
func.func @expected() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = arith.constant dense<[[11.0, 22.0, 33.0], [14.0, 25.0, 36.0]]> : tensor<2x3xf32>
  %m = arith.constant dense<[[2.0, 4.0, 6.0], [-4.0, -5.0, -6.0]]> : tensor<2x3xf32>
  %k = arith.constant dense<[[0.5, 2.0, 6.0], [2.0, 5.0, 12.0]]> : tensor<2x3xf32>
  %l = arith.constant dense<[[1.5, 1.0, 3.25], [4.5, 4.0, 6.25]]> : tensor<2x3xf32>
  return %a, %m, %k, %l : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
func.func @hand() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %v = arith.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %r = arith.constant dense<[[2.0], [-1.0]]> : tensor<2x1xf32>
  %c = arith.constant dense<[[0.5, 1.0, 2.0]]> : tensor<1x3xf32>
  %id = arith.constant dense<[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]> : tensor<3x3xf32>
  %bias = arith.constant dense<[0.5, -1.0, 0.25]> : tensor<3xf32>
  %a = fusion.add %x, %v : tensor<2x3xf32>, tensor<3xf32>
  %m = fusion.mul %x, %r : tensor<2x3xf32>, tensor<2x1xf32>
  %k = fusion.mul %x, %c : tensor<2x3xf32>, tensor<1x3xf32>
  %l = fusion.matmul %x, %id bias(%bias : tensor<3xf32>) : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x3xf32>
  return %a, %m, %k, %l : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// A rank-3 lhs and an [N] rhs: the vector repeats over both leading dimensions.
func.func @explicit_add_vector(%x: tensor<4x8x16xf32>, %v: tensor<16xf32>) -> tensor<4x8x16xf32> {
  %e = tensor.empty() : tensor<4x8x16xf32>
  %vb = linalg.broadcast ins(%v : tensor<16xf32>) outs(%e : tensor<4x8x16xf32>) dimensions = [0, 1]
  %y = arith.addf %x, %vb : tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
func.func @fusion_add_vector(%x: tensor<4x8x16xf32>, %v: tensor<16xf32>) -> tensor<4x8x16xf32> {
  %y = fusion.add %x, %v : tensor<4x8x16xf32>, tensor<16xf32>
  return %y : tensor<4x8x16xf32>
}

// A [8, 1] rhs against [4, 8, 16]: one value per (any batch, row).
func.func @explicit_mul_rows(%x: tensor<4x8x16xf32>, %r: tensor<8x1xf32>) -> tensor<4x8x16xf32> {
  %e = tensor.empty() : tensor<4x8x16xf32>
  %rv = tensor.collapse_shape %r [[0, 1]] : tensor<8x1xf32> into tensor<8xf32>
  %rb = linalg.broadcast ins(%rv : tensor<8xf32>) outs(%e : tensor<4x8x16xf32>) dimensions = [0, 2]
  %y = arith.mulf %x, %rb : tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
func.func @fusion_mul_rows(%x: tensor<4x8x16xf32>, %r: tensor<8x1xf32>) -> tensor<4x8x16xf32> {
  %y = fusion.mul %x, %r : tensor<4x8x16xf32>, tensor<8x1xf32>
  return %y : tensor<4x8x16xf32>
}
// Negative: the [8, 1] operand read as if both its dimensions were
// broadcast (only r[0, 0]).
func.func @fusion_mul_cols(%x: tensor<4x8x16xf32>, %r: tensor<8x1xf32>) -> tensor<4x8x16xf32> {
  %e = tensor.empty() : tensor<4x8x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (0, 0)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %r : tensor<4x8x16xf32>, tensor<8x1xf32>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// A bf16 lhs and an f32 [1, N] rhs: the sum in f32, rounded once to bf16.
func.func @explicit_add_mixed(%x: tensor<8x16xbf16>, %v: tensor<1x16xf32>) -> tensor<8x16xbf16> {
  %e = tensor.empty() : tensor<8x16xf32>
  %vv = tensor.collapse_shape %v [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
  %vb = linalg.broadcast ins(%vv : tensor<16xf32>) outs(%e : tensor<8x16xf32>) dimensions = [0]
  %xf = arith.extf %x : tensor<8x16xbf16> to tensor<8x16xf32>
  %s = arith.addf %xf, %vb : tensor<8x16xf32>
  %y = arith.truncf %s : tensor<8x16xf32> to tensor<8x16xbf16>
  return %y : tensor<8x16xbf16>
}
func.func @fusion_add_mixed(%x: tensor<8x16xbf16>, %v: tensor<1x16xf32>) -> tensor<8x16xbf16> {
  %y = fusion.add %x, %v : tensor<8x16xbf16>, tensor<1x16xf32>
  return %y : tensor<8x16xbf16>
}

// Same shapes, f16: the product of two f16 is exact in f32, rounded once.
func.func @explicit_mul_same(%x: tensor<8x16xf16>, %y: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %xf = arith.extf %x : tensor<8x16xf16> to tensor<8x16xf32>
  %yf = arith.extf %y : tensor<8x16xf16> to tensor<8x16xf32>
  %p = arith.mulf %xf, %yf : tensor<8x16xf32>
  %r = arith.truncf %p : tensor<8x16xf32> to tensor<8x16xf16>
  return %r : tensor<8x16xf16>
}
func.func @fusion_mul_same(%x: tensor<8x16xf16>, %y: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %r = fusion.mul %x, %y : tensor<8x16xf16>
  return %r : tensor<8x16xf16>
}

// nn.Linear: x W^T + b, as linalg.matmul into the broadcast bias (f32).
func.func @explicit_linear(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %bb = linalg.broadcast ins(%b : tensor<16xf32>) outs(%e : tensor<8x16xf32>) dimensions = [0]
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xf32>, tensor<16x32xf32>) outs(%bb : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
func.func @fusion_linear(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %y = fusion.matmul %x, %w bias(%b : tensor<16xf32>) {transpose_rhs} : tensor<8x32xf32>, tensor<16x32xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// bf16: the bias joins the f32 sum before the single rounding; the f32
// product of the bf16 operands is the same sum in the same order.
func.func @explicit_linear_bf16(%x: tensor<8x32xbf16>, %w: tensor<16x32xbf16>, %b: tensor<16xbf16>) -> tensor<8x16xbf16> {
  %p = fusion.matmul %x, %w {transpose_rhs} : tensor<8x32xbf16>, tensor<16x32xbf16> -> tensor<8x16xf32>
  %s = fusion.add %p, %b : tensor<8x16xf32>, tensor<16xbf16>
  %y = arith.truncf %s : tensor<8x16xf32> to tensor<8x16xbf16>
  return %y : tensor<8x16xbf16>
}
func.func @fusion_linear_bf16(%x: tensor<8x32xbf16>, %w: tensor<16x32xbf16>, %b: tensor<16xbf16>) -> tensor<8x16xbf16> {
  %y = fusion.matmul %x, %w bias(%b : tensor<16xbf16>) {transpose_rhs} : tensor<8x32xbf16>, tensor<16x32xbf16> -> tensor<8x16xbf16>
  return %y : tensor<8x16xbf16>
}
