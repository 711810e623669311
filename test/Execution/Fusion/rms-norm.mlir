// Reference semantics of fusion.rms_norm, executed on the CPU.
// RUN: fusion-runner %s -e expected --compare=hand --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_rms --compare=fusion_rms --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_rms_bf16 --compare=fusion_rms_bf16 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e fusion_rms_dynamic --compare=fusion_rms_static | FileCheck %s
// RUN: fusion-runner %s -e fusion_rms_one_row --compare=fusion_rms_rank1 --atol=0 --rtol=0 | FileCheck %s
// RUN: not fusion-runner %s -e linalg_rms --compare=fusion_rms_wrong_eps --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// Hand-computed: rows [3, 4] and [1, -2], weight [2, 0.5], eps 1e-5 (values from float64).
func.func @expected() -> (tensor<2x2xf32>, tensor<2xf32>) {
  %y = arith.constant dense<[[1.6970555960, 0.5656851987], [1.2649085343, -0.6324542671]]> : tensor<2x2xf32>
  %r = arith.constant dense<[0.2828425993, 0.6324542671]> : tensor<2xf32>
  return %y, %r : tensor<2x2xf32>, tensor<2xf32>
}
func.func @hand() -> (tensor<2x2xf32>, tensor<2xf32>) {
  %x = arith.constant dense<[[3.0, 4.0], [1.0, -2.0]]> : tensor<2x2xf32>
  %w = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %y, %r = fusion.rms_norm %x weight(%w : tensor<2xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<2x2xf32> -> tensor<2x2xf32>, tensor<2xf32>
  return %y, %r : tensor<2x2xf32>, tensor<2xf32>
}

// An independent formulation in upstream linalg, on random inputs.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @linalg_rms(%x: tensor<16x40xf32>, %w: tensor<40xf32>) -> (tensor<16x40xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 40.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %e = tensor.empty() : tensor<16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x40xf32>) outs(%acc : tensor<16xf32>) {
  ^bb0(%a: f32, %s: f32):
    %sq = arith.mulf %a, %a : f32
    %t = arith.addf %s, %sq : f32
    linalg.yield %t : f32
  } -> tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%ss : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.divf %a, %n : f32
    %v = arith.addf %m, %eps : f32
    %s = math.sqrt %v : f32
    %one = arith.constant 1.0 : f32
    %q = arith.divf %one, %s : f32
    linalg.yield %q : f32
  } -> tensor<16xf32>
  %ey = tensor.empty() : tensor<16x40xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r, %w : tensor<16x40xf32>, tensor<16xf32>, tensor<40xf32>) outs(%ey : tensor<16x40xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.mulf %p, %c : f32
    linalg.yield %q : f32
  } -> tensor<16x40xf32>
  return %y, %r : tensor<16x40xf32>, tensor<16xf32>
}
func.func @fusion_rms(%x: tensor<16x40xf32>, %w: tensor<40xf32>) -> (tensor<16x40xf32>, tensor<16xf32>) {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<40xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<16x40xf32> -> tensor<16x40xf32>, tensor<16xf32>
  return %y, %r : tensor<16x40xf32>, tensor<16xf32>
}
// The same eps-sensitive check must fail when epsilon differs (rows of small norm).
func.func @fusion_rms_wrong_eps(%x: tensor<16x40xf32>, %w: tensor<40xf32>) -> (tensor<16x40xf32>, tensor<16xf32>) {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<40xf32>) {epsilon = 1.0e-01 : f32}
      : tensor<16x40xf32> -> tensor<16x40xf32>, tensor<16xf32>
  return %y, %r : tensor<16x40xf32>, tensor<16xf32>
}

// bf16 data: the reference rounds once, at the end.
func.func @linalg_rms_bf16(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  %xf = arith.extf %x : tensor<8x64xbf16> to tensor<8x64xf32>
  %w = arith.constant dense<1.0> : tensor<64xf32>
  %y, %r = call @fusion_rms_f32(%xf, %w) : (tensor<8x64xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>)
  %yb = arith.truncf %y : tensor<8x64xf32> to tensor<8x64xbf16>
  return %yb : tensor<8x64xbf16>
}
func.func @fusion_rms_f32(%x: tensor<8x64xf32>, %w: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>) {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<8x64xf32> -> tensor<8x64xf32>, tensor<8xf32>
  return %y, %r : tensor<8x64xf32>, tensor<8xf32>
}
func.func @fusion_rms_bf16(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<8x64xbf16> -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// Dynamic shapes lower to the same computation (3-D input: rows are [2, 3]).
func.func @fusion_rms_static(%x: tensor<2x3x24xf16>) -> (tensor<2x3x24xf16>, tensor<2x3xf32>) {
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-06 : f32}
      : tensor<2x3x24xf16> -> tensor<2x3x24xf16>, tensor<2x3xf32>
  return %y, %r : tensor<2x3x24xf16>, tensor<2x3xf32>
}
func.func @fusion_rms_dynamic(%x: tensor<2x3x24xf16>) -> (tensor<2x3x24xf16>, tensor<2x3xf32>) {
  %xd = tensor.cast %x : tensor<2x3x24xf16> to tensor<?x3x?xf16>
  %y, %r = fusion.rms_norm %xd {epsilon = 1.0e-06 : f32}
      : tensor<?x3x?xf16> -> tensor<?x3x?xf16>, tensor<?x3xf32>
  %ys = tensor.cast %y : tensor<?x3x?xf16> to tensor<2x3x24xf16>
  %rs = tensor.cast %r : tensor<?x3xf32> to tensor<2x3xf32>
  return %ys, %rs : tensor<2x3x24xf16>, tensor<2x3xf32>
}

// A single row (rank 1, rank-0 rstd; once a crash of the lowering) computes
// what the same row as a [1, N] tensor does.
func.func @fusion_rms_one_row(%x: tensor<64xf32>, %w: tensor<64xf32>) -> (tensor<64xf32>, tensor<f32>) {
  %x2 = tensor.expand_shape %x [[0, 1]] output_shape [1, 64] : tensor<64xf32> into tensor<1x64xf32>
  %y2, %r1 = fusion.rms_norm %x2 weight(%w : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<1x64xf32> -> tensor<1x64xf32>, tensor<1xf32>
  %y = tensor.collapse_shape %y2 [[0, 1]] : tensor<1x64xf32> into tensor<64xf32>
  %r = tensor.collapse_shape %r1 [] : tensor<1xf32> into tensor<f32>
  return %y, %r : tensor<64xf32>, tensor<f32>
}
func.func @fusion_rms_rank1(%x: tensor<64xf32>, %w: tensor<64xf32>) -> (tensor<64xf32>, tensor<f32>) {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<64xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<64xf32> -> tensor<64xf32>, tensor<f32>
  return %y, %r : tensor<64xf32>, tensor<f32>
}
