// Lazy Pre-Norm for LayerNorm computes layer_norm(A) @ B as
// rstd * (A @ B - mean * colsum(B)). When a row's mean is large relative to
// its spread, A @ B and mean * colsum(B) are large and nearly equal, and the
// f32 subtraction cancels: the deferred form loses accuracy that the two-pass
// unfused form (normalize first, then multiply) keeps. This is why the
// LayerNorm deferral is opt-in (fusion-lazy-prenorm{layer-norm=true}).
//
// Each RUN compares the two-pass unfused program with the deferred one on the
// same inputs (x uniform in [-1, 1) plus a shift c, so mean ~ c, spread ~ 0.6)
// and prints the error. Observed (f32, K = 256, outputs of magnitude ~10):
// c = 0: max_abs_err 2.7e-5; c = 100: 3.4e-3; c = 1000: 3.2e-2.
//
// RUN: fusion-runner %s -e shift0 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e shift100 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-2 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e shift1000 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-1 --rtol=0 | FileCheck %s
// The loss is real: at c = 1000 the deferred form misses a 1e-3 tolerance that
// the exact form (c = 0) meets with room to spare.
// RUN: not fusion-runner %s -e shift1000 --after-passes=fusion-lazy-prenorm{layer-norm=true} --atol=1e-3 --rtol=0 | FileCheck %s --check-prefix=LOSS
// CHECK: result 0: max_abs_err=
// CHECK: PASS
// LOSS: FAIL

func.func private @block(%x: tensor<32x256xf32>, %b: tensor<256x64xf32>, %c: f32) -> tensor<32x64xf32> {
  %shift = tensor.splat %c : tensor<32x256xf32>
  %xs = arith.addf %x, %shift : tensor<32x256xf32>
  %n, %m, %r = fusion.layer_norm %xs {epsilon = 1.0e-05 : f32}
      : tensor<32x256xf32> -> tensor<32x256xf32>, tensor<32xf32>, tensor<32xf32>
  %y = fusion.matmul %n, %b : tensor<32x256xf32>, tensor<256x64xf32> -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

func.func @shift0(%x: tensor<32x256xf32>, %b: tensor<256x64xf32>) -> tensor<32x64xf32> {
  %c = arith.constant 0.0 : f32
  %y = call @block(%x, %b, %c) : (tensor<32x256xf32>, tensor<256x64xf32>, f32) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

func.func @shift100(%x: tensor<32x256xf32>, %b: tensor<256x64xf32>) -> tensor<32x64xf32> {
  %c = arith.constant 100.0 : f32
  %y = call @block(%x, %b, %c) : (tensor<32x256xf32>, tensor<256x64xf32>, f32) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

func.func @shift1000(%x: tensor<32x256xf32>, %b: tensor<256x64xf32>) -> tensor<32x64xf32> {
  %c = arith.constant 1000.0 : f32
  %y = call @block(%x, %b, %c) : (tensor<32x256xf32>, tensor<256x64xf32>, f32) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}
