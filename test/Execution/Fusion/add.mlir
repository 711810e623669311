// Reference semantics of fusion.add (f32 sum, rounded once), on the CPU.
// RUN: fusion-runner %s -e expected --compare=hand --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e arith_add --compare=fusion_add --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e arith_add_bf16 --compare=fusion_add_bf16 --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e arith_add_f16 --compare=fusion_add_f16 --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e arith_add --compare=fusion_sub | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Hand values; 256 + 1 in bf16 is 257 rounded to 256 (8 bits of mantissa),
// and 0.1 + 0.2 rounds to the bf16 nearest 0.3 (0.30078125).
func.func @expected() -> (tensor<2x2xf32>, tensor<2xbf16>) {
  %c = arith.constant dense<[[1.5, -1.0], [0.0, 1.0e+03]]> : tensor<2x2xf32>
  %d = arith.constant dense<[256.0, 0.30078125]> : tensor<2xbf16>
  return %c, %d : tensor<2x2xf32>, tensor<2xbf16>
}
func.func @hand() -> (tensor<2x2xf32>, tensor<2xbf16>) {
  %a = arith.constant dense<[[1.0, -3.0], [-0.25, 999.5]]> : tensor<2x2xf32>
  %b = arith.constant dense<[[0.5, 2.0], [0.25, 0.5]]> : tensor<2x2xf32>
  %c = fusion.add %a, %b : tensor<2x2xf32>
  %x = arith.constant dense<[256.0, 0.1]> : tensor<2xbf16>
  %y = arith.constant dense<[1.0, 0.2]> : tensor<2xbf16>
  %d = fusion.add %x, %y : tensor<2xbf16>
  return %c, %d : tensor<2x2xf32>, tensor<2xbf16>
}

// Random inputs against arith on tensors (convert-elementwise-to-linalg).
func.func @arith_add(%a: tensor<4x8x16xf32>, %b: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %c = arith.addf %a, %b : tensor<4x8x16xf32>
  return %c : tensor<4x8x16xf32>
}
func.func @fusion_add(%a: tensor<4x8x16xf32>, %b: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %c = fusion.add %a, %b : tensor<4x8x16xf32>
  return %c : tensor<4x8x16xf32>
}
// Negative: a difference is not a sum.
func.func @fusion_sub(%a: tensor<4x8x16xf32>, %b: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %c = arith.subf %a, %b : tensor<4x8x16xf32>
  return %c : tensor<4x8x16xf32>
}

// bf16 / f16: sum in f32, round once; the exact sum of two bf16 fits in f32,
// so this equals the correctly rounded sum.
func.func @arith_add_bf16(%a: tensor<64xbf16>, %b: tensor<64xbf16>) -> tensor<64xbf16> {
  %af = arith.extf %a : tensor<64xbf16> to tensor<64xf32>
  %bf = arith.extf %b : tensor<64xbf16> to tensor<64xf32>
  %c = arith.addf %af, %bf : tensor<64xf32>
  %r = arith.truncf %c : tensor<64xf32> to tensor<64xbf16>
  return %r : tensor<64xbf16>
}
func.func @fusion_add_bf16(%a: tensor<64xbf16>, %b: tensor<64xbf16>) -> tensor<64xbf16> {
  %c = fusion.add %a, %b : tensor<64xbf16>
  return %c : tensor<64xbf16>
}
func.func @arith_add_f16(%a: tensor<8x16xf16>, %b: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %af = arith.extf %a : tensor<8x16xf16> to tensor<8x16xf32>
  %bf = arith.extf %b : tensor<8x16xf16> to tensor<8x16xf32>
  %c = arith.addf %af, %bf : tensor<8x16xf32>
  %r = arith.truncf %c : tensor<8x16xf32> to tensor<8x16xf16>
  return %r : tensor<8x16xf16>
}
func.func @fusion_add_f16(%a: tensor<8x16xf16>, %b: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %c = fusion.add %a, %b : tensor<8x16xf16>
  return %c : tensor<8x16xf16>
}
