// Tests --after-passes: @f runs in the input module and in a copy transformed
// by the pipeline, on the same inputs. A bare pass list is wrapped in
// builtin.module(...); an explicit builtin.module(...) is taken as is.

// RUN: fusion-runner %s -e softplus_like --after-passes=canonicalize,cse | FileCheck %s --check-prefix=CANON
// RUN: fusion-runner %s -e softplus_like --after-passes='builtin.module(func.func(canonicalize),inline)' | FileCheck %s --check-prefix=CANON
// RUN: fusion-runner %s -e softplus_like --after-passes='func.func(linalg-generalize-named-ops)' | FileCheck %s --check-prefix=CANON
// RUN: not fusion-runner %s -e softplus_like --compare=softplus_wrong --after-passes=canonicalize | FileCheck %s --check-prefix=WRONG

// The pipeline really runs: the transformed copy is what gets lowered.
// RUN: fusion-runner %s -e softplus_like --after-passes=canonicalize --dump-lowered | FileCheck %s --check-prefix=DUMP

// CANON: result 0: max_abs_err=0 max_rel_err=0 mismatches=0/128 (atol=1e-05, rtol=1e-05)
// CANON-NEXT: result 1: max_abs_err=0 max_rel_err=0 mismatches=0/16 (atol=1e-05, rtol=1e-05)
// CANON-NEXT: PASS

// WRONG: result 0: {{.*}} mismatches={{[1-9][0-9]*}}/128
// WRONG: first mismatch at {{.*}} (@softplus_like) vs {{.*}} (@softplus_wrong after passes)
// WRONG: FAIL

// DUMP: // ----- lowered module of @softplus_like{{$}}
// DUMP: llvm.func @_mlir_ciface___fusion_runner_softplus_like
// DUMP: // ----- lowered module of @softplus_like after passes{{$}}
// DUMP: llvm.func @_mlir_ciface___fusion_runner_softplus_like

// log(1 + exp(x)) in bf16, with foldable `+ 0` and `* 1` for canonicalize,
// and a named matmul for linalg-generalize-named-ops.
func.func @softplus_like(%x: tensor<8x16xbf16>, %w: tensor<16x2xf32>) -> (tensor<8x16xbf16>, tensor<8x2xf32>) {
  %one = arith.constant dense<1.0> : tensor<8x16xbf16>
  %zero = arith.constant dense<0.0> : tensor<8x16xbf16>
  %x0 = arith.addf %x, %zero : tensor<8x16xbf16>
  %x1 = arith.mulf %x0, %one : tensor<8x16xbf16>
  %e = math.exp %x1 : tensor<8x16xbf16>
  %p = arith.addf %e, %one : tensor<8x16xbf16>
  %l = math.log %p : tensor<8x16xbf16>
  %xf = arith.extf %l : tensor<8x16xbf16> to tensor<8x16xf32>
  %z = arith.constant dense<0.0> : tensor<8x2xf32>
  %m = linalg.matmul ins(%xf, %w : tensor<8x16xf32>, tensor<16x2xf32>)
                     outs(%z : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %l, %m : tensor<8x16xbf16>, tensor<8x2xf32>
}

// Forgets the `+ 1`.
func.func @softplus_wrong(%x: tensor<8x16xbf16>, %w: tensor<16x2xf32>) -> (tensor<8x16xbf16>, tensor<8x2xf32>) {
  %e = math.exp %x : tensor<8x16xbf16>
  %l = math.log %e : tensor<8x16xbf16>
  %xf = arith.extf %l : tensor<8x16xbf16> to tensor<8x16xf32>
  %z = arith.constant dense<0.0> : tensor<8x2xf32>
  %m = linalg.matmul ins(%xf, %w : tensor<8x16xf32>, tensor<16x2xf32>)
                     outs(%z : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %l, %m : tensor<8x16xbf16>, tensor<8x2xf32>
}
