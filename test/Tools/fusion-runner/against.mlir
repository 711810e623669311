// Tests --against: @f here against the function of the same name, or the one
// named by --compare, in another file.

// RUN: fusion-runner %s -e gelu --against=%S/Inputs/against-other.mlir | FileCheck %s --check-prefix=SAME
// RUN: not fusion-runner %s -e gelu --against=%S/Inputs/against-other.mlir --compare=gelu_tanh | FileCheck %s --check-prefix=APPROX
// RUN: fusion-runner %s -e gelu --against=%S/Inputs/against-other.mlir --compare=gelu_tanh --atol=1e-3 | FileCheck %s --check-prefix=APPROX-TOL

// gelu(x) = 0.5 x (1 + erf(x / sqrt(2))) written with math.erf here and as a
// linalg.generic in the other file: same operations, same order.
// SAME: result 0: max_abs_err=0 max_rel_err=0 mismatches=0/256 (atol=1e-05, rtol=1e-05)
// SAME-NEXT: PASS

// The tanh approximation differs from the erf form by up to ~3e-4 on [-1, 1).
// APPROX: result 0: {{.*}} mismatches={{[1-9][0-9]*}}/256 (atol=1e-05, rtol=1e-05)
// APPROX-NEXT: first mismatch at {{.*}} (@gelu) vs {{.*}} (@gelu_tanh in {{.*}}against-other.mlir)
// APPROX-NEXT: FAIL
// APPROX-TOL: result 0: {{.*}} mismatches=0/256 (atol=0.001, rtol=1e-05)
// APPROX-TOL-NEXT: PASS
func.func @gelu(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %half = arith.constant dense<0.5> : tensor<16x16xf32>
  %one = arith.constant dense<1.0> : tensor<16x16xf32>
  %rsqrt2 = arith.constant dense<0.707106781> : tensor<16x16xf32>
  %s = arith.mulf %x, %rsqrt2 : tensor<16x16xf32>
  %e = math.erf %s : tensor<16x16xf32>
  %p = arith.addf %one, %e : tensor<16x16xf32>
  %hx = arith.mulf %half, %x : tensor<16x16xf32>
  %r = arith.mulf %hx, %p : tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}
