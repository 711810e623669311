// fusion.fused_matmul forward epilogues (none, row_scale, rms_norm,
// layer_norm; residual, col_bias, norm weight/bias, save_stats) against the
// unfused composition matmul -> add -> norm, in f32 and bf16.
// RUN: fusion-runner %s -e unfused_none --compare=fused_none --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_row_scale --compare=fused_row_scale --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_rms --compare=fused_rms --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_ln --compare=fused_ln --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e unfused_ln_bf16 --compare=fused_ln_bf16 --atol=1e-2 --rtol=1e-2 | FileCheck %s
// RUN: not fusion-runner %s -e prenorm_rms --compare=fused_rms --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e unfused_row_scale --compare=fused_none_as_row_scale --atol=1e-5 --rtol=1e-5 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL

// epilogue none: A @ B + col_bias + residual.
func.func @unfused_none(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %bias: tensor<24xf32>) -> tensor<16x24xf32> {
  %c = fusion.matmul %a, %b : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %e = tensor.empty() : tensor<16x24xf32>
  %bb = linalg.broadcast ins(%bias : tensor<24xf32>) outs(%e : tensor<16x24xf32>) dimensions = [0]
  %t = arith.addf %c, %bb : tensor<16x24xf32>
  %y = fusion.add %t, %res : tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}
func.func @fused_none(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %bias: tensor<24xf32>) -> tensor<16x24xf32> {
  %y = fusion.fused_matmul %a, %b residual(%res : tensor<16x24xf32>) col_bias(%bias : tensor<24xf32>)
      : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}

// epilogue row_scale: row_scale * (A @ B), via linalg.broadcast.
func.func @unfused_row_scale(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %s: tensor<16xf32>) -> tensor<16x24xf32> {
  %c = fusion.matmul %a, %b : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %e = tensor.empty() : tensor<16x24xf32>
  %sb = linalg.broadcast ins(%s : tensor<16xf32>) outs(%e : tensor<16x24xf32>) dimensions = [1]
  %y = arith.mulf %c, %sb : tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}
func.func @fused_row_scale(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %s: tensor<16xf32>) -> tensor<16x24xf32> {
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<16xf32>) {epilogue = #fusion.epilogue<row_scale>}
      : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}
// Negative: without the row_scale epilogue the rows are not scaled.
func.func @fused_none_as_row_scale(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %s: tensor<16xf32>) -> tensor<16x24xf32> {
  %y = fusion.fused_matmul %a, %b : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}

// epilogue rms_norm (post-norm: the residual enters the norm), weight,
// save_stats: rms_norm(A @ B + residual, w) and its rstd.
func.func @unfused_rms(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %w: tensor<24xf32>) -> (tensor<16x24xf32>, tensor<16xf32>) {
  %c = fusion.matmul %a, %b : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %t = fusion.add %c, %res : tensor<16x24xf32>
  %y, %r = fusion.rms_norm %t weight(%w : tensor<24xf32>) {epsilon = 1.0e-05 : f32} : tensor<16x24xf32> -> tensor<16x24xf32>, tensor<16xf32>
  return %y, %r : tensor<16x24xf32>, tensor<16xf32>
}
func.func @fused_rms(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %w: tensor<24xf32>) -> (tensor<16x24xf32>, tensor<16xf32>) {
  %y, %r = fusion.fused_matmul %a, %b residual(%res : tensor<16x24xf32>) norm_weight(%w : tensor<24xf32>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>, tensor<16xf32>
  return %y, %r : tensor<16x24xf32>, tensor<16xf32>
}
// Negative: pre-norm placement (residual added after the norm) is different.
func.func @prenorm_rms(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %w: tensor<24xf32>) -> (tensor<16x24xf32>, tensor<16xf32>) {
  %c = fusion.matmul %a, %b : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %n, %r = fusion.rms_norm %c weight(%w : tensor<24xf32>) {epsilon = 1.0e-05 : f32} : tensor<16x24xf32> -> tensor<16x24xf32>, tensor<16xf32>
  %y = fusion.add %n, %res : tensor<16x24xf32>
  return %y, %r : tensor<16x24xf32>, tensor<16xf32>
}

// epilogue layer_norm with weight, bias, residual, col_bias, save_stats.
func.func @unfused_ln(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %cb: tensor<24xf32>, %w: tensor<24xf32>, %nb: tensor<24xf32>) -> (tensor<16x24xf32>, tensor<16xf32>, tensor<16xf32>) {
  %c = fusion.matmul %a, %b : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %e = tensor.empty() : tensor<16x24xf32>
  %bb = linalg.broadcast ins(%cb : tensor<24xf32>) outs(%e : tensor<16x24xf32>) dimensions = [0]
  %cc = arith.addf %c, %bb : tensor<16x24xf32>
  %t = fusion.add %cc, %res : tensor<16x24xf32>
  %y, %m, %r = fusion.layer_norm %t weight(%w : tensor<24xf32>) bias(%nb : tensor<24xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<16x24xf32> -> tensor<16x24xf32>, tensor<16xf32>, tensor<16xf32>
  return %y, %m, %r : tensor<16x24xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @fused_ln(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>, %res: tensor<16x24xf32>, %cb: tensor<24xf32>, %w: tensor<24xf32>, %nb: tensor<24xf32>) -> (tensor<16x24xf32>, tensor<16xf32>, tensor<16xf32>) {
  %y, %m, %r = fusion.fused_matmul %a, %b residual(%res : tensor<16x24xf32>) col_bias(%cb : tensor<24xf32>)
      norm_weight(%w : tensor<24xf32>) norm_bias(%nb : tensor<24xf32>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>, tensor<16xf32>, tensor<16xf32>
  return %y, %m, %r : tensor<16x24xf32>, tensor<16xf32>, tensor<16xf32>
}

// bf16: the unfused form rounds A @ B and the sum to bf16 before the norm;
// the fused one normalizes the f32 accumulator. Observed max_abs_err 7.8e-3
// on y (one bf16 ulp of ~1-2), 2.3e-3 on the mean, 1.1e-3 on rstd.
func.func @unfused_ln_bf16(%a: tensor<16x32xbf16>, %b: tensor<32x24xbf16>, %res: tensor<16x24xbf16>, %w: tensor<24xbf16>, %nb: tensor<24xbf16>) -> (tensor<16x24xbf16>, tensor<16xf32>, tensor<16xf32>) {
  %c = fusion.matmul %a, %b : tensor<16x32xbf16>, tensor<32x24xbf16> -> tensor<16x24xbf16>
  %t = fusion.add %c, %res : tensor<16x24xbf16>
  %y, %m, %r = fusion.layer_norm %t weight(%w : tensor<24xbf16>) bias(%nb : tensor<24xbf16>) {epsilon = 1.0e-05 : f32}
      : tensor<16x24xbf16> -> tensor<16x24xbf16>, tensor<16xf32>, tensor<16xf32>
  return %y, %m, %r : tensor<16x24xbf16>, tensor<16xf32>, tensor<16xf32>
}
func.func @fused_ln_bf16(%a: tensor<16x32xbf16>, %b: tensor<32x24xbf16>, %res: tensor<16x24xbf16>, %w: tensor<24xbf16>, %nb: tensor<24xbf16>) -> (tensor<16x24xbf16>, tensor<16xf32>, tensor<16xf32>) {
  %y, %m, %r = fusion.fused_matmul %a, %b residual(%res : tensor<16x24xbf16>) norm_weight(%w : tensor<24xbf16>) norm_bias(%nb : tensor<24xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<16x32xbf16>, tensor<32x24xbf16> -> tensor<16x24xbf16>, tensor<16xf32>, tensor<16xf32>
  return %y, %m, %r : tensor<16x24xbf16>, tensor<16xf32>, tensor<16xf32>
}
