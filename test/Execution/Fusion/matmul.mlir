// Reference semantics of fusion.matmul (f32 products and sum, rounded once),
// executed on the CPU: hand values, then linalg.matmul on random inputs.
// RUN: fusion-runner %s -e expected --compare=hand --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e linalg_mm --compare=fusion_mm --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_mm_tt --compare=fusion_mm_tt --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_mm_bf16_f32 --compare=fusion_mm_bf16_f32 --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_mm_f16 --compare=fusion_mm_f16 --atol=1e-3 --rtol=1e-3 | FileCheck %s
// RUN: fusion-runner %s -e fusion_mm --compare=fusion_mm_dynamic --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e linalg_mm_sq --compare=fusion_mm_sq_wrong_transpose | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// A = [[1, 2, 3], [4, 5, 6]], B = [[1, -1], [0.5, 2], [-2, 0.25]]: A @ B by
// hand, and the same product through transpose_lhs (lhs = A^T) and
// transpose_rhs (rhs = B^T); all values are exact in f32.
func.func @expected() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %c = arith.constant dense<[[-4.0, 3.75], [-5.5, 7.5]]> : tensor<2x2xf32>
  return %c, %c, %c : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
func.func @hand() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %at = arith.constant dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf32>
  %b = arith.constant dense<[[1.0, -1.0], [0.5, 2.0], [-2.0, 0.25]]> : tensor<3x2xf32>
  %bt = arith.constant dense<[[1.0, 0.5, -2.0], [-1.0, 2.0, 0.25]]> : tensor<2x3xf32>
  %c0 = fusion.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  %c1 = fusion.matmul %at, %b {transpose_lhs} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  %c2 = fusion.matmul %a, %bt {transpose_rhs} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x2xf32>
  return %c0, %c1, %c2 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// Random f32 inputs against linalg.matmul.
func.func @linalg_mm(%a: tensor<16x24xf32>, %b: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x24xf32>, tensor<24x8xf32>) outs(%acc : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}
func.func @fusion_mm(%a: tensor<16x24xf32>, %b: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %c = fusion.matmul %a, %b : tensor<16x24xf32>, tensor<24x8xf32> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}
// Dynamic shapes lower to the same computation.
func.func @fusion_mm_dynamic(%a: tensor<16x24xf32>, %b: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %ad = tensor.cast %a : tensor<16x24xf32> to tensor<?x?xf32>
  %bd = tensor.cast %b : tensor<24x8xf32> to tensor<?x8xf32>
  %c = fusion.matmul %ad, %bd : tensor<?x?xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %cs = tensor.cast %c : tensor<?x8xf32> to tensor<16x8xf32>
  return %cs : tensor<16x8xf32>
}

// Both operands transposed: linalg.transpose, then linalg.matmul.
func.func @linalg_mm_tt(%a: tensor<24x16xf32>, %b: tensor<8x24xf32>) -> tensor<16x8xf32> {
  %ea = tensor.empty() : tensor<16x24xf32>
  %at = linalg.transpose ins(%a : tensor<24x16xf32>) outs(%ea : tensor<16x24xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<24x8xf32>
  %bt = linalg.transpose ins(%b : tensor<8x24xf32>) outs(%eb : tensor<24x8xf32>) permutation = [1, 0]
  %c = call @linalg_mm(%at, %bt) : (tensor<16x24xf32>, tensor<24x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}
func.func @fusion_mm_tt(%a: tensor<24x16xf32>, %b: tensor<8x24xf32>) -> tensor<16x8xf32> {
  %c = fusion.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<24x16xf32>, tensor<8x24xf32> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// bf16 operands, f32 result: the products are exact in f32, nothing is rounded.
func.func @linalg_mm_bf16_f32(%a: tensor<16x24xbf16>, %b: tensor<24x8xbf16>) -> tensor<16x8xf32> {
  %af = arith.extf %a : tensor<16x24xbf16> to tensor<16x24xf32>
  %bf = arith.extf %b : tensor<24x8xbf16> to tensor<24x8xf32>
  %c = call @linalg_mm(%af, %bf) : (tensor<16x24xf32>, tensor<24x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}
func.func @fusion_mm_bf16_f32(%a: tensor<16x24xbf16>, %b: tensor<24x8xbf16>) -> tensor<16x8xf32> {
  %c = fusion.matmul %a, %b : tensor<16x24xbf16>, tensor<24x8xbf16> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// f16 in and out: accumulate in f32, round once (an f16 accumulator would
// lose ~1e-2 over 24 terms).
func.func @linalg_mm_f16(%a: tensor<16x24xf16>, %b: tensor<24x8xf16>) -> tensor<16x8xf16> {
  %af = arith.extf %a : tensor<16x24xf16> to tensor<16x24xf32>
  %bf = arith.extf %b : tensor<24x8xf16> to tensor<24x8xf32>
  %c = call @linalg_mm(%af, %bf) : (tensor<16x24xf32>, tensor<24x8xf32>) -> tensor<16x8xf32>
  %ch = arith.truncf %c : tensor<16x8xf32> to tensor<16x8xf16>
  return %ch : tensor<16x8xf16>
}
func.func @fusion_mm_f16(%a: tensor<16x24xf16>, %b: tensor<24x8xf16>) -> tensor<16x8xf16> {
  %c = fusion.matmul %a, %b : tensor<16x24xf16>, tensor<24x8xf16> -> tensor<16x8xf16>
  return %c : tensor<16x8xf16>
}

// Negative: a square rhs read as transposed is a different product.
func.func @linalg_mm_sq(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}
func.func @fusion_mm_sq_wrong_transpose(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c = fusion.matmul %a, %b {transpose_rhs} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}
