// RUN: fusion-opt %s -split-input-file "-fusion-fold-norm-weight=report=true" -verify-diagnostics | FileCheck %s

// fusion-fold-norm-weight's decisions, one remark on each training step's
// RMSNorm (a weight, and a gradient reading its input); none on other norms
// (-verify-diagnostics fails on an unexpected remark). The folds are checked
// by execution in test/Execution/Transforms/fold-norm-weight.mlir.

// A Llama pre-norm's training step (dynamic tokens): folded.
// CHECK-LABEL: func.func @step
// CHECK: %[[XH:.*]], %[[R:.*]] = fusion.rms_norm %arg0 {epsilon
// CHECK: %[[WG:.*]] = fusion.mul %arg2, %arg1 : tensor<512x256xbf16>, tensor<256xbf16>
// CHECK: fusion.matmul %[[XH]], %[[WG]] {transpose_rhs}
// CHECK: fusion.fused_matmul %arg3, %[[XH]] col_scale(%arg1 : tensor<256xbf16>) {transpose_lhs}
// CHECK: fusion.rms_norm_grad %arg4, %[[XH]], %[[R]] weight(%arg1 : tensor<256xbf16>) {normalized_input}
func.func @step(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %w: tensor<512x256xbf16>, %dy: tensor<?x512xbf16>, %dn: tensor<?x256xbf16>)
    -> (tensor<?x512xbf16>, tensor<512x256xbf16>, tensor<?x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm weight folded into 1 linear layer(s) and 1 weight gradient(s); the gradient reads x_hat}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  %dw = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x512xbf16>, tensor<?x256xbf16> -> tensor<512x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  return %y, %dw, %dh, %dg : tensor<?x512xbf16>, tensor<512x256xbf16>, tensor<?x256xbf16>, tensor<256xf32>
}

// -----

// A weightless norm: nothing to fold, no remark.
// CHECK-LABEL: func.func @no_weight
// CHECK: fusion.rms_norm %arg0 {epsilon
func.func @no_weight(%h: tensor<?x256xbf16>, %w: tensor<512x256xbf16>, %dn: tensor<?x256xbf16>) -> (tensor<?x512xbf16>, tensor<?x256xbf16>) {
  %n, %r = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  %dh = fusion.rms_norm_grad %dn, %h, %r : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>
  return %y, %dh : tensor<?x512xbf16>, tensor<?x256xbf16>
}

// -----

// Rows of a 3-D tensor: the layers read 2-D rows.
func.func @rows_3d(%h: tensor<2x?x256xbf16>, %g: tensor<256xbf16>, %dn: tensor<2x?x256xbf16>) -> (tensor<2x?x256xbf16>, tensor<2x?x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm weight not folded: its rows are not 2-D (the linear layers read [M, N])}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<2x?x256xbf16> -> tensor<2x?x256xbf16>, tensor<2x?xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<2x?x256xbf16>, tensor<2x?x256xbf16>, tensor<2x?xf32> -> tensor<2x?x256xbf16>, tensor<256xf32>
  return %n, %dh, %dg : tensor<2x?x256xbf16>, tensor<2x?x256xbf16>, tensor<256xf32>
}

// -----

// The norm's input is also returned: the step keeps h anyway.
// CHECK-LABEL: func.func @input_returned
// CHECK: fusion.rms_norm %arg0 weight
func.func @input_returned(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %w: tensor<512x256xbf16>, %dn: tensor<?x256xbf16>)
    -> (tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<256xf32>, tensor<?x256xbf16>) {
  // expected-remark @below {{fusion.rms_norm weight not folded: its input has a reader other than the norm and its gradient (the step would save it anyway)}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  return %y, %dh, %dg, %h : tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<256xf32>, tensor<?x256xbf16>
}

// -----

// Inference (no gradient): the weight stays in the norm, where the epilogue
// norm or Lazy Pre-Norm applies it for free; no remark.
// CHECK-LABEL: func.func @inference
// CHECK: fusion.rms_norm %arg0 weight
func.func @inference(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %w: tensor<512x256xbf16>) -> tensor<?x512xbf16> {
  %n = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}

// -----

// The norm's output is also returned (or read by anything but a layer and
// its weight gradient): n itself is needed.
func.func @output_returned(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %w: tensor<512x256xbf16>, %dn: tensor<?x256xbf16>)
    -> (tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<256xf32>, tensor<?x256xbf16>) {
  // expected-remark @below {{fusion.rms_norm weight not folded: its output has a reader other than linear layers n W^T and their weight gradients dy^T n: func.return}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  return %y, %dh, %dg, %n : tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<256xf32>, tensor<?x256xbf16>
}

// -----

// Only a weight gradient reads the output: no layer to fold the weight into.
func.func @no_layer(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %dy: tensor<?x512xbf16>, %dn: tensor<?x256xbf16>)
    -> (tensor<512x256xbf16>, tensor<?x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm weight not folded: its output feeds no linear layer n W^T}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %dw = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x512xbf16>, tensor<?x256xbf16> -> tensor<512x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  return %dw, %dh, %dg : tensor<512x256xbf16>, tensor<?x256xbf16>, tensor<256xf32>
}

// -----

// A gated MLP's gate and up projections, 2 x 3.5 N outputs: W diag(g) would
// read and write 7 N^2 weights a call.
func.func @wide_layers(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %wg: tensor<896x256xbf16>, %wu: tensor<896x256xbf16>, %dn: tensor<?x256xbf16>)
    -> (tensor<?x896xbf16>, tensor<?x896xbf16>, tensor<?x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm weight not folded: its layers' weights are not static [out, N] with at most 2 N outputs in all (W diag(g), computed on every call, would cost about what the fold saves)}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %a = fusion.matmul %n, %wg {transpose_rhs} : tensor<?x256xbf16>, tensor<896x256xbf16> -> tensor<?x896xbf16>
  %b = fusion.matmul %n, %wu {transpose_rhs} : tensor<?x256xbf16>, tensor<896x256xbf16> -> tensor<?x896xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  return %a, %b, %dh, %dg : tensor<?x896xbf16>, tensor<?x896xbf16>, tensor<?x256xbf16>, tensor<256xf32>
}

// -----

// An f32 output of bf16 rows: x_hat would reach the gradient in f32, where
// it read h in bf16.
func.func @output_type(%h: tensor<?x256xbf16>, %g: tensor<256xbf16>, %w: tensor<512x256xf32>, %dn: tensor<?x256xbf16>)
    -> (tensor<?x512xf32>, tensor<?x256xbf16>, tensor<256xf32>) {
  // expected-remark @below {{fusion.rms_norm weight not folded: its output's type differs from its input's (the gradient would read x_hat where it read h)}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xf32>, tensor<?xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  return %y, %dh, %dg : tensor<?x512xf32>, tensor<?x256xbf16>, tensor<256xf32>
}

// -----

// Constant weights (a model compiled with its parameters inlined): W diag(g)
// is computed at compile time, as Lazy Pre-Norm folds its weight.
// CHECK-LABEL: func.func @constant_weights
// CHECK-DAG: %[[WG:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 1.500000e+00], [4.000000e+00, 6.000000e+00]]> : tensor<2x2xf32>
// CHECK-NOT: fusion.mul
// CHECK: fusion.matmul %{{.*}}, %[[WG]] {transpose_rhs}
func.func @constant_weights(%h: tensor<?x2xf32>, %dn: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<2xf32>) {
  %g = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %w = arith.constant dense<[[1.0, 0.5], [2.0, 2.0]]> : tensor<2x2xf32>
  // expected-remark @below {{fusion.rms_norm weight folded into 1 linear layer(s) and 0 weight gradient(s); the gradient reads x_hat}}
  %n, %r = fusion.rms_norm %h weight(%g : tensor<2xf32>) {epsilon = 1.0e-05 : f32} : tensor<?x2xf32> -> tensor<?x2xf32>, tensor<?xf32>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x2xf32>, tensor<2x2xf32> -> tensor<?x2xf32>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %r weight(%g : tensor<2xf32>) : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xf32> -> tensor<?x2xf32>, tensor<2xf32>
  return %y, %dh, %dg : tensor<?x2xf32>, tensor<?x2xf32>, tensor<2xf32>
}

// -----

// The front end's backward (its forward saved x_hat): the weight gradient
// scaled by g after the GEMM becomes the GEMM's col_scale.
// CHECK-LABEL: func.func @column_scale
// CHECK: %[[DW:.*]] = fusion.fused_matmul %arg0, %arg1 col_scale(%arg2 : tensor<256xbf16>) {transpose_lhs}
// CHECK-NOT: fusion.mul
// CHECK: return %[[DW]]
func.func @column_scale(%dy: tensor<?x512xbf16>, %xh: tensor<?x256xbf16>, %g: tensor<256xbf16>) -> tensor<512x256xbf16> {
  %gw = fusion.matmul %dy, %xh {transpose_lhs} : tensor<?x512xbf16>, tensor<?x256xbf16> -> tensor<512x256xbf16>
  // expected-remark @below {{fusion.mul column scale fused into its GEMM (col_scale)}}
  %dw = fusion.mul %gw, %g : tensor<512x256xbf16>, tensor<256xbf16>
  return %dw : tensor<512x256xbf16>
}

// -----

// A GEMM with a bias: (acc + b) v is not acc v + b, the scale stays.
// CHECK-LABEL: func.func @column_scale_bias
// CHECK: fusion.matmul
// CHECK: fusion.mul
func.func @column_scale_bias(%x: tensor<?x256xbf16>, %w: tensor<512x256xbf16>, %b: tensor<512xbf16>, %v: tensor<512xbf16>) -> tensor<?x512xbf16> {
  %y = fusion.matmul %x, %w bias(%b : tensor<512xbf16>) {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  // expected-remark @below {{fusion.mul column scale not fused into its GEMM: the GEMM adds a bias (the scale would apply to it too)}}
  %s = fusion.mul %y, %v : tensor<?x512xbf16>, tensor<512xbf16>
  return %s : tensor<?x512xbf16>
}

// -----

// The GEMM's output read again: the scale stays.
// CHECK-LABEL: func.func @column_scale_other_reader
// CHECK: fusion.matmul
// CHECK: fusion.mul
func.func @column_scale_other_reader(%x: tensor<?x256xbf16>, %w: tensor<512x256xbf16>, %v: tensor<512xbf16>) -> (tensor<?x512xbf16>, tensor<?x512xbf16>) {
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xbf16>
  // expected-remark @below {{fusion.mul column scale not fused into its GEMM: the GEMM's output has other readers}}
  %s = fusion.mul %y, %v : tensor<?x512xbf16>, tensor<512xbf16>
  return %s, %y : tensor<?x512xbf16>, tensor<?x512xbf16>
}

// -----

// A GEMM with a norm epilogue: not an element-wise output to scale.
// CHECK-LABEL: func.func @column_scale_epilogue
// CHECK: fusion.fused_matmul
// CHECK: fusion.mul
func.func @column_scale_epilogue(%x: tensor<?x256xbf16>, %w: tensor<256x512xbf16>, %v: tensor<512xbf16>) -> tensor<?x512xbf16> {
  %y = fusion.fused_matmul %x, %w {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32} : tensor<?x256xbf16>, tensor<256x512xbf16> -> tensor<?x512xbf16>
  // expected-remark @below {{fusion.mul column scale not fused into its GEMM: the GEMM has the rms_norm epilogue}}
  %s = fusion.mul %y, %v : tensor<?x512xbf16>, tensor<512xbf16>
  return %s : tensor<?x512xbf16>
}

// -----

// A row scale ([M, 1]) or a same-shape product: not a column scale, no remark.
// CHECK-LABEL: func.func @not_column_scale
// CHECK-COUNT-2: fusion.mul
func.func @not_column_scale(%x: tensor<64x256xbf16>, %w: tensor<512x256xbf16>, %r: tensor<64x1xbf16>, %z: tensor<64x512xbf16>) -> (tensor<64x512xbf16>, tensor<64x512xbf16>) {
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<64x256xbf16>, tensor<512x256xbf16> -> tensor<64x512xbf16>
  %a = fusion.mul %y, %r : tensor<64x512xbf16>, tensor<64x1xbf16>
  %y2 = fusion.matmul %x, %w {transpose_rhs} : tensor<64x256xbf16>, tensor<512x256xbf16> -> tensor<64x512xbf16>
  %b = fusion.mul %y2, %z : tensor<64x512xbf16>
  return %a, %b : tensor<64x512xbf16>, tensor<64x512xbf16>
}
