// Tests --compare: two formulations of the same computation PASS, different
// computations FAIL with the mismatch count and location, the tolerances
// decide, and NaNs match only NaNs.

// RUN: fusion-runner %s -e matmul_named --compare=matmul_generic | FileCheck %s --check-prefix=SAME
// RUN: not fusion-runner %s -e add_bf16 --compare=add_bf16_perturbed | FileCheck %s --check-prefix=DIFF
// RUN: fusion-runner %s -e add_bf16 --compare=add_bf16_perturbed --atol=0.5 | FileCheck %s --check-prefix=ATOL
// RUN: fusion-runner %s -e add_bf16 --compare=add_bf16_perturbed --rtol=10 | FileCheck %s --check-prefix=RTOL
// RUN: fusion-runner %s -e nan --compare=nan | FileCheck %s --check-prefix=NAN-NAN
// RUN: not fusion-runner %s -e nan --compare=zero | FileCheck %s --check-prefix=NAN-ZERO
// RUN: fusion-runner %s -e sum_div --compare=sum_mul_reciprocal | FileCheck %s --check-prefix=CLOSE
// RUN: not fusion-runner %s -e sum_div --compare=sum_mul_reciprocal --atol=0 --rtol=0 | FileCheck %s --check-prefix=EXACT

// linalg.matmul and the equivalent linalg.generic accumulate in the same
// order: bit-identical.
// SAME: result 0: max_abs_err=0 max_rel_err=0 mismatches=0/3072 (atol=1e-05, rtol=1e-05)
// SAME-NEXT: PASS
func.func @matmul_named(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %z = arith.constant dense<0.0> : tensor<64x48xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%z : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %c : tensor<64x48xf32>
}

#mA = affine_map<(i, j, k) -> (i, k)>
#mB = affine_map<(i, j, k) -> (k, j)>
#mC = affine_map<(i, j, k) -> (i, j)>
func.func @matmul_generic(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %z = arith.constant dense<0.0> : tensor<64x48xf32>
  %c = linalg.generic {indexing_maps = [#mA, #mB, #mC],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%z : tensor<64x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x48xf32>
  return %c : tensor<64x48xf32>
}

// One element of the second result differs by 0.25 (a + b is in (-2, 2),
// so the relative error of that element is at least 0.125).
// DIFF: result 0: max_abs_err=0 max_rel_err=0 mismatches=0/16 (atol=1e-05, rtol=1e-05)
// DIFF-NEXT: result 1: max_abs_err=0.25 max_rel_err={{[0-9.e+-]+}} mismatches=1/16 (atol=1e-05, rtol=1e-05)
// DIFF-NEXT: first mismatch at [2, 1]: {{.*}} (@add_bf16) vs {{.*}} (@add_bf16_perturbed)
// DIFF-NEXT: FAIL
// ATOL: result 1: max_abs_err=0.25 {{.*}} mismatches=0/16 (atol=0.5, rtol=1e-05)
// ATOL-NEXT: PASS
// RTOL: result 1: {{.*}} mismatches=0/16 (atol=1e-05, rtol=10)
// RTOL-NEXT: PASS
func.func @add_bf16(%a: tensor<4x4xbf16>, %b: tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>) {
  %s = arith.addf %a, %b : tensor<4x4xbf16>
  return %a, %s : tensor<4x4xbf16>, tensor<4x4xbf16>
}

func.func @add_bf16_perturbed(%a: tensor<4x4xbf16>, %b: tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>) {
  %d = arith.constant dense<[[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                             [0.0, 0.25, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xbf16>
  %s = arith.addf %a, %b : tensor<4x4xbf16>
  %bf = arith.extf %s : tensor<4x4xbf16> to tensor<4x4xf32>
  %df = arith.extf %d : tensor<4x4xbf16> to tensor<4x4xf32>
  %p = arith.addf %bf, %df : tensor<4x4xf32>
  %r = arith.truncf %p : tensor<4x4xf32> to tensor<4x4xbf16>
  return %a, %r : tensor<4x4xbf16>, tensor<4x4xbf16>
}

// NaN matches NaN, and nothing else.
// NAN-NAN: result 0: max_abs_err=0 max_rel_err=0 mismatches=0/3
// NAN-NAN-NEXT: PASS
// NAN-ZERO: result 0: max_abs_err=0 max_rel_err=0 mismatches=3/3
// NAN-ZERO-NEXT: first mismatch at [0]: nan (@nan) vs 0 (@zero)
// NAN-ZERO-NEXT: FAIL
func.func @nan(%x: tensor<3xf16>) -> tensor<3xf16> {
  %s = arith.subf %x, %x : tensor<3xf16>
  %n = arith.divf %s, %s : tensor<3xf16>
  return %n : tensor<3xf16>
}

func.func @zero(%x: tensor<3xf16>) -> tensor<3xf16> {
  %s = arith.subf %x, %x : tensor<3xf16>
  return %s : tensor<3xf16>
}

// Mean as sum / 3 and as sum * (1 / 3): equal up to rounding, but not
// bit-identical on these inputs.
// CLOSE: result 0: max_abs_err={{[0-9.e+-]+}} max_rel_err={{[0-9.e+-]+}} mismatches=0/64 (atol=1e-05, rtol=1e-05)
// CLOSE-NEXT: PASS
// EXACT: result 0: {{.*}} mismatches={{[1-9][0-9]*}}/64 (atol=0, rtol=0)
// EXACT: FAIL
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
func.func @row_sum(%x: tensor<64x3xf32>) -> tensor<64xf32> {
  %z = arith.constant dense<0.0> : tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x3xf32>) outs(%z : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}

func.func @sum_div(%x: tensor<64x3xf32>) -> tensor<64xf32> {
  %s = call @row_sum(%x) : (tensor<64x3xf32>) -> tensor<64xf32>
  %n = arith.constant dense<3.0> : tensor<64xf32>
  %m = arith.divf %s, %n : tensor<64xf32>
  return %m : tensor<64xf32>
}

func.func @sum_mul_reciprocal(%x: tensor<64x3xf32>) -> tensor<64xf32> {
  %s = call @row_sum(%x) : (tensor<64x3xf32>) -> tensor<64xf32>
  %r = arith.constant dense<0.333333333> : tensor<64xf32>
  %m = arith.mulf %s, %r : tensor<64xf32>
  return %m : tensor<64xf32>
}
