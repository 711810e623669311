// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=rms-prologue=true | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels="rms-prologue=true report=true" -verify-diagnostics -o /dev/null
// Off by default (until convert-fusion-to-gpu lowers the prologue):
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s --check-prefix=OFF

// fusion-plan-kernels{rms-prologue} folds a fusion.rms_norm_grad whose input
// gradient, its rows [.., H * Dv] expanded to [.., H, Dv], is a
// fusion.gdpa_grad's output gradient into that gdpa_grad as its
// RMSNorm-gradient prologue: the Kunlun block's backward (dh also the
// residual, after the dh + dq1 fold: grad_residual; dy and h taken from
// before their collapse_shape), and the weightless form (new expand_shapes of
// dy and x, another residual kept). Not on sm_100a, not for jagged q, not
// where dh or dx has another use, not where the norm gradient adds a
// residual or its weight gradient is used before the gdpa_grad.

// The Kunlun block's backward on sm_90a, dynamic batch and length.
// CHECK-LABEL: func.func @kunlun
// CHECK-SAME: (%[[DOUT:[^:]*]]: tensor<?x?x2x64xbf16>, %[[H:[^:]*]]: tensor<?x?x2x64xbf16>, %[[RR:[^:]*]]: tensor<?x?xf32>, %[[W:[^:]*]]: tensor<128xbf16>, %[[LN:[^:]*]]: tensor<?x?x2x64xbf16>, %[[K:[^:]*]]: tensor<?x16x2x64xbf16>, %[[V:[^:]*]]: tensor<?x16x2x64xbf16>)
// CHECK-NOT: fusion.rms_norm_grad
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[DLNQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[DRW:.*]] = fusion.gdpa_grad %[[DOUT]], %[[LN]], %[[K]], %[[V]]
// CHECK-SAME: rms_norm_grad(%[[H]], %[[RR]] : tensor<?x?x2x64xbf16>, tensor<?x?xf32>) rms_weight(%[[W]] : tensor<128xbf16>)
// CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, grad_residual, scale = 1.000000e+00 : f32}
// CHECK-SAME: -> tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<128xf32>
// CHECK-NOT: fusion.add
// CHECK: return %[[DLNQ]], %[[DK]], %[[DV]], %[[DRW]]
// OFF-LABEL: func.func @kunlun
// OFF: fusion.rms_norm_grad
// OFF: fusion.gdpa_grad {{.*}} residual(
// OFF-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @kunlun(%dout: tensor<?x?x2x64xbf16>, %h: tensor<?x?x2x64xbf16>, %rr: tensor<?x?xf32>, %w: tensor<128xbf16>,
                  %ln: tensor<?x?x2x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>)
    -> (tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %dout, %c0 : tensor<?x?x2x64xbf16>
  %l = tensor.dim %dout, %c1 : tensor<?x?x2x64xbf16>
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<?x?x2x64xbf16> into tensor<?x?x128xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<?x?x2x64xbf16> into tensor<?x?x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%w : tensor<128xbf16>)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [%b, %l, 2, 64] : tensor<?x?x128xbf16> into tensor<?x?x2x64xbf16>
  // expected-remark @below {{the fusion.rms_norm_grad of its output gradient folded in as its RMSNorm-gradient prologue (the kernel computes do from dy, a cluster of the H heads' CTAs summing each token's row)}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
      -> tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
  %dlnq = fusion.add %dh, %dq1 : tensor<?x?x2x64xbf16>
  return %dlnq, %dk, %dv, %drw : tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<128xf32>
}
}

// -----

// Without a weight (no parameter gradient), dy and x not views of [.., H,
// Dv] tensors (new expand_shapes of them), a residual of another tensor
// (kept), 4 heads of Dv = 128.
// CHECK-LABEL: func.func @weightless
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<2x64x512xbf16>, %[[X:[^:]*]]: tensor<2x64x512xbf16>, %[[RR:[^:]*]]: tensor<2x64xf32>, %[[Q:[^:]*]]: tensor<2x64x4x128xbf16>, %[[K:[^:]*]]: tensor<2x128x4x128xbf16>, %[[R:[^:]*]]: tensor<2x64x4x128xbf16>)
// CHECK-DAG: %[[DY4:.*]] = tensor.expand_shape %[[DY]] {{\[}}[0], [1], [2, 3]] output_shape [2, 64, 4, 128] : tensor<2x64x512xbf16> into tensor<2x64x4x128xbf16>
// CHECK-DAG: %[[X4:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [2, 64, 4, 128] : tensor<2x64x512xbf16> into tensor<2x64x4x128xbf16>
// CHECK-NOT: fusion.rms_norm_grad
// CHECK: %[[DQ:.*]], %{{.*}}, %{{.*}} = fusion.gdpa_grad %[[DY4]], %[[Q]], %[[K]], %[[K]] residual(%[[R]] : tensor<2x64x4x128xbf16>)
// CHECK-SAME: rms_norm_grad(%[[X4]], %[[RR]] : tensor<2x64x4x128xbf16>, tensor<2x64xf32>)
// CHECK-SAME: {activation = #fusion.activation<silu>, scale = 1.250000e-01 : f32}
// CHECK-SAME: -> tensor<2x64x4x128xbf16>, tensor<2x128x4x128xbf16>, tensor<2x128x4x128xbf16>{{$}}
// CHECK: return %[[DQ]]
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @weightless(%dy: tensor<2x64x512xbf16>, %x: tensor<2x64x512xbf16>, %rr: tensor<2x64xf32>,
                      %q: tensor<2x64x4x128xbf16>, %k: tensor<2x128x4x128xbf16>, %r: tensor<2x64x4x128xbf16>)
    -> tensor<2x64x4x128xbf16> {
  %dhf = fusion.rms_norm_grad %dy, %x, %rr : tensor<2x64x512xbf16>, tensor<2x64x512xbf16>, tensor<2x64xf32> -> tensor<2x64x512xbf16>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 64, 4, 128] : tensor<2x64x512xbf16> into tensor<2x64x4x128xbf16>
  // expected-remark @below {{the fusion.rms_norm_grad of its output gradient folded in as its RMSNorm-gradient prologue}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %k residual(%r : tensor<2x64x4x128xbf16>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x4x128xbf16>, tensor<2x64x4x128xbf16>, tensor<2x128x4x128xbf16>, tensor<2x128x4x128xbf16>
      -> tensor<2x64x4x128xbf16>, tensor<2x128x4x128xbf16>, tensor<2x128x4x128xbf16>
  return %dq : tensor<2x64x4x128xbf16>
}
}

// -----

// sm_100a has no prologue in its backward kernel: the chain stays (dh + dq1
// still folds as the residual).
// CHECK-LABEL: func.func @sm100a
// CHECK: fusion.rms_norm_grad
// CHECK: fusion.gdpa_grad {{.*}} residual(
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @sm100a(%dout: tensor<2x64x2x64xbf16>, %h: tensor<2x64x2x64xbf16>, %rr: tensor<2x64xf32>, %w: tensor<128xbf16>,
                  %ln: tensor<2x64x2x64xbf16>, %k: tensor<2x16x2x64xbf16>)
    -> (tensor<2x64x2x64xbf16>, tensor<128xf32>) {
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<2x64x2x64xbf16> into tensor<2x64x128xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<2x64x2x64xbf16> into tensor<2x64x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%w : tensor<128xbf16>)
      : tensor<2x64x128xbf16>, tensor<2x64x128xbf16>, tensor<2x64xf32> -> tensor<2x64x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 64, 2, 64] : tensor<2x64x128xbf16> into tensor<2x64x2x64xbf16>
  // expected-remark @below {{the fusion.rms_norm_grad of its output gradient not folded in as its prologue: no sm_100a attention backward kernel takes it: expected sm_90a for gdpa_grad's RMSNorm-gradient prologue (the sm_100a backward does not compute it yet)}}
  // expected-remark @below {{attention backward kernel on sm_100a}}
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  %dlnq = fusion.add %dh, %dq1 : tensor<2x64x2x64xbf16>
  return %dlnq, %drw : tensor<2x64x2x64xbf16>, tensor<128xf32>
}
}

// -----

// Jagged q: the prologue's cluster walks the tiles of one batch, so the
// kernel takes dense q only.
// CHECK-LABEL: func.func @jagged
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @jagged(%dout: tensor<100x2x64xbf16>, %h: tensor<100x2x64xbf16>, %rr: tensor<100xf32>, %w: tensor<128xbf16>,
                  %ln: tensor<100x2x64xbf16>, %k: tensor<4x16x2x64xbf16>, %off: tensor<5xi32>)
    -> (tensor<100x2x64xbf16>, tensor<128xf32>) {
  %doutf = tensor.collapse_shape %dout [[0], [1, 2]] : tensor<100x2x64xbf16> into tensor<100x128xbf16>
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : tensor<100x2x64xbf16> into tensor<100x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%w : tensor<128xbf16>)
      : tensor<100x128xbf16>, tensor<100x128xbf16>, tensor<100xf32> -> tensor<100x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1, 2]] output_shape [100, 2, 64] : tensor<100x128xbf16> into tensor<100x2x64xbf16>
  // expected-remark @below {{not folded in as its prologue: no sm_90a attention backward kernel takes it: expected dense q for gdpa_grad's RMSNorm-gradient prologue (its cluster walks the tiles of one batch), but got jagged q (offsets)}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %k offsets(%off : tensor<5xi32>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<100x2x64xbf16>, tensor<100x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16>
      -> tensor<100x2x64xbf16>, tensor<4x16x2x64xbf16>, tensor<4x16x2x64xbf16>
  return %dq, %drw : tensor<100x2x64xbf16>, tensor<128xf32>
}
}

// -----

// L_kv = 200: the kernel takes keys past 128 in two passes over the query
// tiles, and the prologue would turn each dO tile into dh twice; the chain
// stays (the gdpa_grad alone runs in two passes).
// CHECK-LABEL: func.func @long_kv
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @long_kv(%dout: tensor<4x100x2x64xbf16>, %h: tensor<4x100x2x64xbf16>, %rr: tensor<4x100xf32>, %w: tensor<128xbf16>,
                   %ln: tensor<4x100x2x64xbf16>, %k: tensor<4x200x2x64xbf16>)
    -> (tensor<4x100x2x64xbf16>, tensor<128xf32>) {
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<4x100x2x64xbf16> into tensor<4x100x128xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<4x100x2x64xbf16> into tensor<4x100x128xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%w : tensor<128xbf16>)
      : tensor<4x100x128xbf16>, tensor<4x100x128xbf16>, tensor<4x100xf32> -> tensor<4x100x128xbf16>, tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [4, 100, 2, 64] : tensor<4x100x128xbf16> into tensor<4x100x2x64xbf16>
  // expected-remark @below {{not folded in as its prologue: no sm_90a attention backward kernel takes it: expected a key/value length up to 128 for gdpa_grad's RMSNorm-gradient prologue (it turns each dO tile into dh once, and keys past 128 take a second pass over the tiles), but got 200}}
  // expected-remark @below {{attention backward kernel on sm_90a: units (batch, head) in 2 passes of 128 keys over the query tiles (L_kv 200; dQ's partial sums in f32 through global memory), 2 consumer warpgroups of 64 keys}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<4x100x2x64xbf16>, tensor<4x100x2x64xbf16>, tensor<4x200x2x64xbf16>, tensor<4x200x2x64xbf16>
      -> tensor<4x100x2x64xbf16>, tensor<4x200x2x64xbf16>, tensor<4x200x2x64xbf16>
  return %dq, %drw : tensor<4x100x2x64xbf16>, tensor<128xf32>
}
}

// -----

// D = Dv = 256: the kernel takes heads past 128 columns in column passes
// over the query tiles, and the prologue would turn each dO tile into dh
// once per pass; the chain stays (the gdpa_grad alone runs in passes of 64
// keys, two column passes each).
// CHECK-LABEL: func.func @wide_heads
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wide_heads(%dout: tensor<4x100x2x256xbf16>, %h: tensor<4x100x2x256xbf16>, %rr: tensor<4x100xf32>, %w: tensor<512xbf16>,
                      %ln: tensor<4x100x2x256xbf16>, %k: tensor<4x128x2x256xbf16>)
    -> (tensor<4x100x2x256xbf16>, tensor<512xf32>) {
  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : tensor<4x100x2x256xbf16> into tensor<4x100x512xbf16>
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : tensor<4x100x2x256xbf16> into tensor<4x100x512xbf16>
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%w : tensor<512xbf16>)
      : tensor<4x100x512xbf16>, tensor<4x100x512xbf16>, tensor<4x100xf32> -> tensor<4x100x512xbf16>, tensor<512xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [4, 100, 2, 256] : tensor<4x100x512xbf16> into tensor<4x100x2x256xbf16>
  // expected-remark @below {{not folded in as its prologue: no sm_90a attention backward kernel takes it: expected D and Dv up to 128 for gdpa_grad's RMSNorm-gradient prologue (its warps and x's tile need the registers and shared memory that wider heads take for dK and dV), but got D 256, Dv 256}}
  // expected-remark @below {{attention backward kernel on sm_90a: units (batch, head) in 2 passes of 64 keys over the query tiles (L_kv 128; dQ's partial sums in f32 through global memory), 2 consumer warpgroups of 64 keys (dK, dV in registers over the unit's query tiles of 64 tokens, dQ through dS in shared memory); D 256, Dv 256: both warpgroups on the same keys, one computing P^T, dV and dQ, the other dS^T and dK (each walking the tiles once a pass of keys, dQ staged a 64-column block at a time); 2 stages of Q, dO: 230400 bytes of shared memory of 232448}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %k {activation = #fusion.activation<gelu_tanh>, scale = 0.0625 : f32}
      : tensor<4x100x2x256xbf16>, tensor<4x100x2x256xbf16>, tensor<4x128x2x256xbf16>, tensor<4x128x2x256xbf16>
      -> tensor<4x100x2x256xbf16>, tensor<4x128x2x256xbf16>, tensor<4x128x2x256xbf16>
  return %dq, %drw : tensor<4x100x2x256xbf16>, tensor<512xf32>
}
}

// -----

// dh has another use (returned): the norm gradient's dx must still be
// written, so the chain stays.
// CHECK-LABEL: func.func @dh_other_use
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dh_other_use(%dy: tensor<2x64x128xbf16>, %x: tensor<2x64x128xbf16>, %rr: tensor<2x64xf32>,
                        %q: tensor<2x64x2x64xbf16>, %k: tensor<2x16x2x64xbf16>)
    -> (tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>) {
  %dhf = fusion.rms_norm_grad %dy, %x, %rr : tensor<2x64x128xbf16>, tensor<2x64x128xbf16>, tensor<2x64xf32> -> tensor<2x64x128xbf16>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 64, 2, 64] : tensor<2x64x128xbf16> into tensor<2x64x2x64xbf16>
  // expected-remark @below {{not folded in as its prologue: its output gradient has other uses than the gdpa_grad's grad and residual}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  return %dq, %dh : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
}
}

// -----

// dx (before its expand_shape) has another use.
// CHECK-LABEL: func.func @dx_other_use
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dx_other_use(%dy: tensor<2x64x128xbf16>, %x: tensor<2x64x128xbf16>, %rr: tensor<2x64xf32>,
                        %q: tensor<2x64x2x64xbf16>, %k: tensor<2x16x2x64xbf16>)
    -> (tensor<2x64x2x64xbf16>, tensor<2x64x128xbf16>) {
  %dhf = fusion.rms_norm_grad %dy, %x, %rr : tensor<2x64x128xbf16>, tensor<2x64x128xbf16>, tensor<2x64xf32> -> tensor<2x64x128xbf16>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 64, 2, 64] : tensor<2x64x128xbf16> into tensor<2x64x2x64xbf16>
  // expected-remark @below {{not folded in as its prologue: the rms_norm_grad's input gradient has other uses than the tensor.expand_shape}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  return %dq, %dhf : tensor<2x64x2x64xbf16>, tensor<2x64x128xbf16>
}
}

// -----

// The norm gradient adds a residual of its own (dx + r would have to be
// the output gradient).
// CHECK-LABEL: func.func @norm_residual
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @norm_residual(%dy: tensor<2x64x128xbf16>, %x: tensor<2x64x128xbf16>, %rr: tensor<2x64xf32>, %r: tensor<2x64x128xbf16>,
                         %q: tensor<2x64x2x64xbf16>, %k: tensor<2x16x2x64xbf16>) -> tensor<2x64x2x64xbf16> {
  %dhf = fusion.rms_norm_grad %dy, %x, %rr residual(%r : tensor<2x64x128xbf16>)
      : tensor<2x64x128xbf16>, tensor<2x64x128xbf16>, tensor<2x64xf32> -> tensor<2x64x128xbf16>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 64, 2, 64] : tensor<2x64x128xbf16> into tensor<2x64x2x64xbf16>
  // expected-remark @below {{not folded in as its prologue: the rms_norm_grad adds a residual}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  return %dq : tensor<2x64x2x64xbf16>
}
}

// -----

// The weight gradient is used before the gdpa_grad, whose place the fused
// op takes.
// CHECK-LABEL: func.func @weight_grad_used_before
// CHECK: fusion.rms_norm_grad
// CHECK-NOT: rms_norm_grad(
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @weight_grad_used_before(%dy: tensor<2x64x128xbf16>, %x: tensor<2x64x128xbf16>, %rr: tensor<2x64xf32>, %w: tensor<128xbf16>,
                                   %q: tensor<2x64x2x64xbf16>, %k: tensor<2x16x2x64xbf16>)
    -> (tensor<2x64x2x64xbf16>, tensor<128xf32>) {
  %dhf, %drw = fusion.rms_norm_grad %dy, %x, %rr weight(%w : tensor<128xbf16>)
      : tensor<2x64x128xbf16>, tensor<2x64x128xbf16>, tensor<2x64xf32> -> tensor<2x64x128xbf16>, tensor<128xf32>
  %drw2 = fusion.add %drw, %drw : tensor<128xf32>
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [2, 64, 2, 64] : tensor<2x64x128xbf16> into tensor<2x64x2x64xbf16>
  // expected-remark @below {{not folded in as its prologue: the rms_norm_grad's weight gradient is used before the gdpa_grad}}
  // expected-remark @below {{attention backward kernel on sm_90a}}
  %dq, %dk, %dv = fusion.gdpa_grad %dh, %q, %k, %k {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
      -> tensor<2x64x2x64xbf16>, tensor<2x16x2x64xbf16>, tensor<2x16x2x64xbf16>
  return %dq, %drw2 : tensor<2x64x2x64xbf16>, tensor<128xf32>
}
}
