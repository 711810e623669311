// fusion-raise-linalg on the CPU: each linalg norm or matmul computes the same
// values before and after raising (random inputs), the raised IR holds the
// fusion ops, and a comparison against a different function fails.
// RUN: fusion-opt %s --fusion-raise-linalg | FileCheck %s --check-prefix=RAISED
// RUN: fusion-runner %s -e rms_torch --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e rms_hand --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e rms_reduce_rstd --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e rms_bf16 --after-passes=fusion-raise-linalg --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e rms_bf16_convert --after-passes=fusion-raise-linalg --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e ln_torch --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e ln_torch --after-passes=fusion-raise-linalg --input-offset=50 --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e ln_hand --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e ln_bf16 --after-passes=fusion-raise-linalg --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e mm_f32 --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e mm_bf16_tb --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e mm_f16_ta --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e bmm_1 --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: not fusion-runner %s -e rms_wrong_n --compare=rms_hand --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// RAISED-LABEL: func.func @rms_torch
// RAISED: fusion.rms_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @rms_hand
// RAISED: fusion.rms_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @rms_reduce_rstd
// RAISED: fusion.rms_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @rms_bf16
// RAISED: fusion.rms_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @rms_bf16_convert
// RAISED: fusion.rms_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @ln_torch
// RAISED: fusion.layer_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @ln_hand
// RAISED: fusion.layer_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @ln_bf16
// RAISED: fusion.layer_norm
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @mm_f32
// RAISED: fusion.matmul
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @mm_bf16_tb
// RAISED: fusion.matmul
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @mm_f16_ta
// RAISED: fusion.matmul
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @bmm_1
// RAISED: fusion.matmul
// RAISED-NOT: linalg.
// RAISED-LABEL: func.func @rms_wrong_n
// RAISED-NOT: fusion.rms_norm
// RAISED: return

#id = affine_map<(d0, d1) -> (d0, d1)>
#keep = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// torch-mlir's aten.rms_norm: pow, keep-dim sum, div by N (i64), add eps
// (f64 truncated), rsqrt, then x * rstd and * weight in separate generics.
func.func @rms_torch(%x: tensor<8x64xf32>, %w: tensor<64xf32>) -> tensor<8x64xf32> {
  %c2 = arith.constant 2.000000e+00 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 64 : i64
  %eps = arith.constant 9.9999999999999995E-7 : f64
  %e = tensor.empty() : tensor<8x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = math.powf %a, %c2 : f32
    linalg.yield %p : f32
  } -> tensor<8x64xf32>
  %e1 = tensor.empty() : tensor<8x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #keep], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<8x64xf32>) outs(%z : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8x1xf32>
  %mean = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%sum : tensor<8x1xf32>) outs(%e1 : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %nf = arith.sitofp %n : i64 to f32
    %d = arith.divf %a, %nf : f32
    linalg.yield %d : f32
  } -> tensor<8x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mean : tensor<8x1xf32>) outs(%e1 : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ef = arith.truncf %eps : f64 to f32
    %s = arith.addf %a, %ef : f32
    %r = math.rsqrt %s : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #keep, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %rstd : tensor<8x64xf32>, tensor<8x1xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %yw = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %w : tensor<8x64xf32>, tensor<64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  return %yw : tensor<8x64xf32>
}

// Hand-written: sum of x*x in one reduction generic, rstd = 1/sqrt(sum * (1/N)
// + eps) with eps as a scalar operand, x * broadcast(rstd), no weight.
func.func @rms_hand(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %inv = arith.constant 1.562500e-02 : f32
  %one = arith.constant 1.000000e+00 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #s1, #r1], iterator_types = ["parallel"]} ins(%ss, %eps : tensor<8xf32>, f32) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %ep: f32, %o: f32):
    %m = arith.mulf %a, %inv : f32
    %s = arith.addf %m, %ep : f32
    %q = math.sqrt %s : f32
    %r = arith.divf %one, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %b = linalg.broadcast ins(%rstd : tensor<8xf32>) outs(%e : tensor<8x64xf32>) dimensions = [1]
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %c, %a : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// A square generic, linalg.reduce, an rsqrt generic and a product with the
// weight through linalg.broadcast; the rstd tensor is also returned.
func.func @rms_reduce_rstd(%x: tensor<8x64xf32>, %w: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 6.400000e+01 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    linalg.yield %p : f32
  } -> tensor<8x64xf32>
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.reduce ins(%sq : tensor<8x64xf32>) outs(%z : tensor<8xf32>) dimensions = [1]
    (%a: f32, %o: f32) {
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    }
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%ss : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    %s = arith.addf %eps, %d : f32
    %r = math.rsqrt %s : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %wb = linalg.broadcast ins(%w : tensor<64xf32>) outs(%e : tensor<8x64xf32>) dimensions = [0]
  %y = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %rstd, %wb : tensor<8x64xf32>, tensor<8xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %r: f32, %g: f32, %o: f32):
    %m = arith.mulf %a, %r : f32
    %m2 = arith.mulf %m, %g : f32
    linalg.yield %m2 : f32
  } -> tensor<8x64xf32>
  return %y, %rstd : tensor<8x64xf32>, tensor<8xf32>
}

// bf16 input and weight, rank 3: extf in the reduction and in the final
// generic, f32 arithmetic, one truncf at the end.
func.func @rms_bf16(%x: tensor<2x4x64xbf16>, %w: tensor<64xbf16>) -> tensor<2x4x64xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 6.400000e+01 : f32
  %eps = arith.constant 1.000000e-06 : f32
  %er = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<2x4xf32>) -> tensor<2x4xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x64xbf16>) outs(%z : tensor<2x4xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %p = arith.mulf %f, %f : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %rstd = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ss : tensor<2x4xf32>) outs(%er : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    %s = arith.addf %d, %eps : f32
    %r = math.rsqrt %s : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4x64xbf16>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %rstd, %w : tensor<2x4x64xbf16>, tensor<2x4xf32>, tensor<64xbf16>) outs(%e : tensor<2x4x64xbf16>) {
  ^bb0(%a: bf16, %r: f32, %g: bf16, %o: bf16):
    %f = arith.extf %a : bf16 to f32
    %gf = arith.extf %g : bf16 to f32
    %m = arith.mulf %f, %r : f32
    %m2 = arith.mulf %m, %gf : f32
    %t = arith.truncf %m2 : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x4x64xbf16>
  return %y : tensor<2x4x64xbf16>
}

// torch-mlir style bf16 without weight: a convert-to-f32 generic, the f32
// norm, then a convert-to-bf16 generic.
func.func @rms_bf16_convert(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 6.400000e+01 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %ef = tensor.empty() : tensor<8x64xf32>
  %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xbf16>) outs(%ef : tensor<8x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<8x64xf32>
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%xf : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%ss : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    %s = arith.addf %d, %eps : f32
    %r = math.rsqrt %s : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %rstd : tensor<8x64xf32>, tensor<8xf32>) outs(%ef : tensor<8x64xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %m = arith.mulf %a, %r : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %e = tensor.empty() : tensor<8x64xbf16>
  %yb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x64xf32>) outs(%e : tensor<8x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x64xbf16>
  return %yb : tensor<8x64xbf16>
}

// torch-mlir's aten.native_layer_norm: keep-dim mean, x - mean (with the
// alpha = 1 multiply), square, keep-dim variance, rsqrt, * weight, + bias;
// mean and rstd are returned.
func.func @ln_torch(%x: tensor<8x64xf32>, %w: tensor<64xf32>, %bias: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1 : i64
  %n = arith.constant 64 : i64
  %eps = arith.constant 1.000000e-05 : f64
  %e = tensor.empty() : tensor<8x64xf32>
  %e1 = tensor.empty() : tensor<8x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #keep], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%z : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8x1xf32>
  %mean = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%sum : tensor<8x1xf32>) outs(%e1 : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %nf = arith.sitofp %n : i64 to f32
    %d = arith.divf %a, %nf : f32
    linalg.yield %d : f32
  } -> tensor<8x1xf32>
  %xc = linalg.generic {indexing_maps = [#id, #keep, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %mean : tensor<8x64xf32>, tensor<8x1xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %al = arith.sitofp %one : i64 to f32
    %sc = arith.mulf %m, %al : f32
    %d = arith.subf %a, %sc : f32
    linalg.yield %d : f32
  } -> tensor<8x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xc, %xc : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<8x64xf32>
  %vs = linalg.generic {indexing_maps = [#id, #keep], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<8x64xf32>) outs(%z : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8x1xf32>
  %var = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%vs : tensor<8x1xf32>) outs(%e1 : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %nf = arith.sitofp %n : i64 to f32
    %d = arith.divf %a, %nf : f32
    linalg.yield %d : f32
  } -> tensor<8x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%var : tensor<8x1xf32>) outs(%e1 : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ef = arith.truncf %eps : f64 to f32
    %s = arith.addf %a, %ef : f32
    %r = math.rsqrt %s : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #keep, #id], iterator_types = ["parallel", "parallel"]} ins(%xc, %rstd : tensor<8x64xf32>, tensor<8x1xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %m = arith.mulf %a, %r : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %yw = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %w : tensor<8x64xf32>, tensor<64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %g: f32, %o: f32):
    %m = arith.mulf %a, %g : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %yb = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%yw, %bias : tensor<8x64xf32>, tensor<64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %al = arith.sitofp %one : i64 to f32
    %sc = arith.mulf %c, %al : f32
    %s = arith.addf %a, %sc : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  return %yb, %mean, %rstd : tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>
}

// Hand-written LayerNorm without weight or bias: fused generics, mean and
// variance multiplied by 1/N.
func.func @ln_hand(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %inv = arith.constant 1.562500e-02 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %inv : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %vs = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %mean : tensor<8x64xf32>, tensor<8xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %p = arith.mulf %d, %d : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %mean, %vs : tensor<8x64xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %m: f32, %v: f32, %o: f32):
    %var = arith.mulf %v, %inv : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %a, %m : f32
    %y = arith.mulf %d, %r : f32
    linalg.yield %y : f32
  } -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// bf16 LayerNorm with weight and bias: extf in the reductions, one fused
// f32 epilogue, one truncf.
func.func @ln_bf16(%x: tensor<8x64xbf16>, %w: tensor<64xbf16>, %bias: tensor<64xbf16>) -> tensor<8x64xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 6.400000e+01 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x64xbf16>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %s = arith.addf %o, %f : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.divf %a, %n : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %vs = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %mean : tensor<8x64xbf16>, tensor<8xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: bf16, %m: f32, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %d = arith.subf %f, %m : f32
    %p = arith.mulf %d, %d : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%vs : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %mean, %rstd, %w, %bias : tensor<8x64xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<64xbf16>, tensor<64xbf16>) outs(%e : tensor<8x64xbf16>) {
  ^bb0(%a: bf16, %m: f32, %r: f32, %g: bf16, %c: bf16, %o: bf16):
    %f = arith.extf %a : bf16 to f32
    %gf = arith.extf %g : bf16 to f32
    %cf = arith.extf %c : bf16 to f32
    %d = arith.subf %f, %m : f32
    %y = arith.mulf %d, %r : f32
    %yw = arith.mulf %y, %gf : f32
    %yb = arith.addf %yw, %cf : f32
    %t = arith.truncf %yb : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// linalg.matmul in f32 into a zero fill.
func.func @mm_f32(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%z : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// bf16 operands with a transposed B (indexing maps), accumulated in f32.
func.func @mm_bf16_tb(%a: tensor<16x32xbf16>, %b: tensor<8x32xbf16>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<16x32xbf16>, tensor<8x32xbf16>) outs(%z : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// f16 operands with a transposed A.
func.func @mm_f16_ta(%a: tensor<32x16xf16>, %b: tensor<32x8xf16>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<32x16xf16>, tensor<32x8xf16>) outs(%z : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// linalg.batch_matmul with a batch of 1.
func.func @bmm_1(%a: tensor<1x16x32xf32>, %b: tensor<1x32x8xf32>) -> tensor<1x16x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x16x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8xf32>) -> tensor<1x16x8xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x16x32xf32>, tensor<1x32x8xf32>) outs(%z : tensor<1x16x8xf32>) -> tensor<1x16x8xf32>
  return %c : tensor<1x16x8xf32>
}

// Divides the sum of squares by 32 instead of 64: not raised, and not equal
// to the RMSNorm (the FAIL run).
func.func @rms_wrong_n(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 3.200000e+01 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ss : tensor<8x64xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %s, %n : f32
    %v = arith.addf %d, %eps : f32
    %r = math.rsqrt %v : f32
    %m = arith.mulf %a, %r : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
