// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// RUN: fusion-opt %s --mlir-print-op-generic | fusion-opt | FileCheck %s

// Round trip of fusion.gdpa and fusion.gdpa_grad: every activation, dense and
// jagged (offsets) layouts, i32 and i64 offsets, a value head dimension that
// differs from the query's, dynamic dimensions, and gdpa_grad's
// RMSNorm-gradient prologue (with and without its weight, grad_residual).

// Dense gdpa, identity activation, bf16.
// CHECK-LABEL: func.func @gdpa_identity
// CHECK-SAME: (%[[Q:.*]]: tensor<2x64x4x32xbf16>, %[[K:.*]]: tensor<2x16x4x32xbf16>, %[[V:.*]]: tensor<2x16x4x32xbf16>)
func.func @gdpa_identity(%q: tensor<2x64x4x32xbf16>, %k: tensor<2x16x4x32xbf16>,
                         %v: tensor<2x16x4x32xbf16>) -> tensor<2x64x4x32xbf16> {
  // CHECK: %[[O:.*]] = fusion.gdpa %[[Q]], %[[K]], %[[V]]
  // CHECK-SAME: {activation = #fusion.activation<identity>, scale = 1.250000e-01 : f32}
  // CHECK-SAME: : tensor<2x64x4x32xbf16>, tensor<2x16x4x32xbf16>, tensor<2x16x4x32xbf16> -> tensor<2x64x4x32xbf16>
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<identity>, scale = 0.125 : f32}
      : tensor<2x64x4x32xbf16>, tensor<2x16x4x32xbf16>, tensor<2x16x4x32xbf16>
      -> tensor<2x64x4x32xbf16>
  // CHECK: return %[[O]]
  return %o : tensor<2x64x4x32xbf16>
}

// Dense gdpa, relu, f16.
// CHECK-LABEL: func.func @gdpa_relu
func.func @gdpa_relu(%q: tensor<1x8x2x16xf16>, %k: tensor<1x8x2x16xf16>,
                     %v: tensor<1x8x2x16xf16>) -> tensor<1x8x2x16xf16> {
  // CHECK: fusion.gdpa
  // CHECK-SAME: activation = #fusion.activation<relu>
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16> -> tensor<1x8x2x16xf16>
  return %o : tensor<1x8x2x16xf16>
}

// Dense gdpa, gelu, f32.
// CHECK-LABEL: func.func @gdpa_gelu
func.func @gdpa_gelu(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>,
                     %v: tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32> {
  // CHECK: fusion.gdpa
  // CHECK-SAME: activation = #fusion.activation<gelu>,
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu>, scale = 1.0 : f32}
      : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// Dense gdpa, gelu_tanh, with a value head dimension (Dv = 8) different from
// the query's (D = 16).
// CHECK-LABEL: func.func @gdpa_gelu_tanh_value_dim
func.func @gdpa_gelu_tanh_value_dim(%q: tensor<1x8x2x16xbf16>, %k: tensor<1x4x2x16xbf16>,
                                    %v: tensor<1x4x2x8xbf16>) -> tensor<1x8x2x8xbf16> {
  // CHECK: fusion.gdpa
  // CHECK-SAME: activation = #fusion.activation<gelu_tanh>
  // CHECK-SAME: : tensor<1x8x2x16xbf16>, tensor<1x4x2x16xbf16>, tensor<1x4x2x8xbf16> -> tensor<1x8x2x8xbf16>
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<1x8x2x16xbf16>, tensor<1x4x2x16xbf16>, tensor<1x4x2x8xbf16> -> tensor<1x8x2x8xbf16>
  return %o : tensor<1x8x2x8xbf16>
}

// Dense gdpa, silu, dynamic dimensions.
// CHECK-LABEL: func.func @gdpa_silu_dynamic
func.func @gdpa_silu_dynamic(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>,
                             %v: tensor<?x?x?x?xbf16>) -> tensor<?x?x2x?xbf16> {
  // CHECK: fusion.gdpa
  // CHECK-SAME: activation = #fusion.activation<silu>
  // CHECK-SAME: -> tensor<?x?x2x?xbf16>
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x?x?xbf16> -> tensor<?x?x2x?xbf16>
  return %o : tensor<?x?x2x?xbf16>
}

// Jagged gdpa: q is [T, H, D], i32 offsets of size B + 1.
// CHECK-LABEL: func.func @gdpa_jagged_i32
// CHECK-SAME: (%[[Q:.*]]: tensor<2048x2x128xbf16>, %[[K:.*]]: tensor<8x128x2x128xbf16>, %[[V:.*]]: tensor<8x128x2x128xbf16>, %[[OFF:.*]]: tensor<9xi32>)
func.func @gdpa_jagged_i32(%q: tensor<2048x2x128xbf16>, %k: tensor<8x128x2x128xbf16>,
                           %v: tensor<8x128x2x128xbf16>, %off: tensor<9xi32>)
    -> tensor<2048x2x128xbf16> {
  // CHECK: %[[O:.*]] = fusion.gdpa %[[Q]], %[[K]], %[[V]] offsets(%[[OFF]] : tensor<9xi32>)
  // CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, scale = 1.000000e+00 : f32}
  // CHECK-SAME: : tensor<2048x2x128xbf16>, tensor<8x128x2x128xbf16>, tensor<8x128x2x128xbf16> -> tensor<2048x2x128xbf16>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<9xi32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2048x2x128xbf16>, tensor<8x128x2x128xbf16>, tensor<8x128x2x128xbf16>
      -> tensor<2048x2x128xbf16>
  // CHECK: return %[[O]]
  return %o : tensor<2048x2x128xbf16>
}

// Jagged gdpa with i64 offsets and a dynamic batch.
// CHECK-LABEL: func.func @gdpa_jagged_i64_dynamic
func.func @gdpa_jagged_i64_dynamic(%q: tensor<?x2x16xf32>, %k: tensor<?x8x2x16xf32>,
                                   %v: tensor<?x8x2x16xf32>, %off: tensor<?xi64>)
    -> tensor<?x2x16xf32> {
  // CHECK: fusion.gdpa %{{.*}}, %{{.*}}, %{{.*}} offsets(%{{.*}} : tensor<?xi64>)
  // CHECK-SAME: activation = #fusion.activation<relu>
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi64>)
      {activation = #fusion.activation<relu>, scale = 2.0 : f32}
      : tensor<?x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32> -> tensor<?x2x16xf32>
  return %o : tensor<?x2x16xf32>
}

// gdpa with a residual added to the output, dense and jagged (after offsets).
// CHECK-LABEL: func.func @gdpa_residual
// CHECK-SAME: (%[[Q:.*]]: tensor<2x64x2x32xbf16>, %[[K:.*]]: tensor<2x16x2x32xbf16>, %[[R:.*]]: tensor<2x64x2x32xbf16>, %[[JQ:.*]]: tensor<100x2x32xbf16>, %[[OFF:.*]]: tensor<3xi32>)
func.func @gdpa_residual(%q: tensor<2x64x2x32xbf16>, %k: tensor<2x16x2x32xbf16>,
                         %r: tensor<2x64x2x32xbf16>, %jq: tensor<100x2x32xbf16>,
                         %off: tensor<3xi32>)
    -> (tensor<2x64x2x32xbf16>, tensor<100x2x32xbf16>) {
  // CHECK: fusion.gdpa %[[Q]], %[[K]], %[[K]] residual(%[[R]] : tensor<2x64x2x32xbf16>)
  // CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, scale = 1.000000e+00 : f32}
  // CHECK-SAME: -> tensor<2x64x2x32xbf16>
  %o = fusion.gdpa %q, %k, %k residual(%r : tensor<2x64x2x32xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16> -> tensor<2x64x2x32xbf16>
  // CHECK: fusion.gdpa %[[JQ]], %[[K]], %[[K]] offsets(%[[OFF]] : tensor<3xi32>) residual(%[[JQ]] : tensor<100x2x32xbf16>)
  // CHECK-SAME: -> tensor<100x2x32xbf16>
  %jo = fusion.gdpa %jq, %k, %k offsets(%off : tensor<3xi32>) residual(%jq : tensor<100x2x32xbf16>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<100x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16> -> tensor<100x2x32xbf16>
  return %o, %jo : tensor<2x64x2x32xbf16>, tensor<100x2x32xbf16>
}

// Dense gdpa_grad: dq, dk, dv have the types of q, k, v.
// CHECK-LABEL: func.func @gdpa_grad_dense
// CHECK-SAME: (%[[DO:.*]]: tensor<2x64x2x32xf32>, %[[Q:.*]]: tensor<2x64x2x32xf32>, %[[K:.*]]: tensor<2x16x2x32xf32>, %[[V:.*]]: tensor<2x16x2x32xf32>)
func.func @gdpa_grad_dense(%do: tensor<2x64x2x32xf32>, %q: tensor<2x64x2x32xf32>,
                           %k: tensor<2x16x2x32xf32>, %v: tensor<2x16x2x32xf32>)
    -> (tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>) {
  // CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = fusion.gdpa_grad %[[DO]], %[[Q]], %[[K]], %[[V]]
  // CHECK-SAME: {activation = #fusion.activation<silu>, scale = 1.250000e-01 : f32}
  // CHECK-SAME: -> tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
      {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x32xf32>, tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>
      -> tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>
  // CHECK: return %[[DQ]], %[[DK]], %[[DV]]
  return %dq, %dk, %dv : tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>
}

// Jagged gdpa_grad with Dv != D, bf16; the grad has the value head dimension.
// CHECK-LABEL: func.func @gdpa_grad_jagged
// CHECK-SAME: (%[[DO:.*]]: tensor<100x2x8xbf16>, %[[Q:.*]]: tensor<100x2x16xbf16>, %[[K:.*]]: tensor<4x32x2x16xbf16>, %[[V:.*]]: tensor<4x32x2x8xbf16>, %[[OFF:.*]]: tensor<5xi32>)
func.func @gdpa_grad_jagged(%do: tensor<100x2x8xbf16>, %q: tensor<100x2x16xbf16>,
                            %k: tensor<4x32x2x16xbf16>, %v: tensor<4x32x2x8xbf16>,
                            %off: tensor<5xi32>)
    -> (tensor<100x2x16xbf16>, tensor<4x32x2x16xbf16>, tensor<4x32x2x8xbf16>) {
  // CHECK: fusion.gdpa_grad %[[DO]], %[[Q]], %[[K]], %[[V]] offsets(%[[OFF]] : tensor<5xi32>)
  // CHECK-SAME: activation = #fusion.activation<gelu>
  // CHECK-SAME: -> tensor<100x2x16xbf16>, tensor<4x32x2x16xbf16>, tensor<4x32x2x8xbf16>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<5xi32>)
      {activation = #fusion.activation<gelu>, scale = 1.0 : f32}
      : tensor<100x2x8xbf16>, tensor<100x2x16xbf16>, tensor<4x32x2x16xbf16>, tensor<4x32x2x8xbf16>
      -> tensor<100x2x16xbf16>, tensor<4x32x2x16xbf16>, tensor<4x32x2x8xbf16>
  return %dq, %dk, %dv : tensor<100x2x16xbf16>, tensor<4x32x2x16xbf16>, tensor<4x32x2x8xbf16>
}

// gdpa_grad with a residual added to dq, dense and jagged (after offsets).
// CHECK-LABEL: func.func @gdpa_grad_residual
// CHECK-SAME: (%[[DO:.*]]: tensor<2x64x2x32xbf16>, %[[Q:.*]]: tensor<2x64x2x32xbf16>, %[[K:.*]]: tensor<2x16x2x32xbf16>, %[[R:.*]]: tensor<2x64x2x32xbf16>, %[[JQ:.*]]: tensor<100x2x32xbf16>, %[[OFF:.*]]: tensor<3xi64>)
func.func @gdpa_grad_residual(%do: tensor<2x64x2x32xbf16>, %q: tensor<2x64x2x32xbf16>,
                              %k: tensor<2x16x2x32xbf16>, %r: tensor<2x64x2x32xbf16>,
                              %jq: tensor<100x2x32xbf16>, %off: tensor<3xi64>)
    -> (tensor<2x64x2x32xbf16>, tensor<100x2x32xbf16>) {
  // CHECK: fusion.gdpa_grad %[[DO]], %[[Q]], %[[K]], %[[K]] residual(%[[R]] : tensor<2x64x2x32xbf16>)
  // CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, scale = 1.000000e+00 : f32}
  // CHECK-SAME: -> tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %k residual(%r : tensor<2x64x2x32xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x64x2x32xbf16>, tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
      -> tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
  // CHECK: fusion.gdpa_grad %[[JQ]], %[[JQ]], %[[K]], %[[K]] offsets(%[[OFF]] : tensor<3xi64>) residual(%[[JQ]] : tensor<100x2x32xbf16>)
  // CHECK-SAME: -> tensor<100x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
  %jdq, %jdk, %jdv = fusion.gdpa_grad %jq, %jq, %k, %k offsets(%off : tensor<3xi64>)
      residual(%jq : tensor<100x2x32xbf16>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<100x2x32xbf16>, tensor<100x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
      -> tensor<100x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
  return %dq, %jdq : tensor<2x64x2x32xbf16>, tensor<100x2x32xbf16>
}

// gdpa_grad with the RMSNorm-gradient prologue and its weight (whose
// gradient is a fourth result, f32 [H * Dv]), grad_residual.
// CHECK-LABEL: func.func @gdpa_grad_rms_prologue
// CHECK-SAME: (%[[DY:.*]]: tensor<2x64x2x32xbf16>, %[[Q:.*]]: tensor<2x64x2x32xbf16>, %[[K:.*]]: tensor<2x16x2x32xbf16>, %[[X:.*]]: tensor<2x64x2x32xbf16>, %[[R:.*]]: tensor<2x64xf32>, %[[W:.*]]: tensor<64xbf16>)
func.func @gdpa_grad_rms_prologue(%dy: tensor<2x64x2x32xbf16>, %q: tensor<2x64x2x32xbf16>,
                                  %k: tensor<2x16x2x32xbf16>, %x: tensor<2x64x2x32xbf16>,
                                  %r: tensor<2x64xf32>, %w: tensor<64xbf16>)
    -> (tensor<2x64x2x32xbf16>, tensor<64xf32>) {
  // CHECK: %[[DQ:.*]], %{{.*}}, %{{.*}}, %[[DW:.*]] = fusion.gdpa_grad %[[DY]], %[[Q]], %[[K]], %[[K]]
  // CHECK-SAME: rms_norm_grad(%[[X]], %[[R]] : tensor<2x64x2x32xbf16>, tensor<2x64xf32>) rms_weight(%[[W]] : tensor<64xbf16>)
  // CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, grad_residual, scale = 1.000000e+00 : f32}
  // CHECK-SAME: -> tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<64xf32>
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %dy, %q, %k, %k
      rms_norm_grad(%x, %r : tensor<2x64x2x32xbf16>, tensor<2x64xf32>)
      rms_weight(%w : tensor<64xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, grad_residual}
      : tensor<2x64x2x32xbf16>, tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>
      -> tensor<2x64x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x32xbf16>, tensor<64xf32>
  // CHECK: return %[[DQ]], %[[DW]]
  return %dq, %dw : tensor<2x64x2x32xbf16>, tensor<64xf32>
}

// The prologue without a weight (no fourth result), Dv != D, after a
// residual; dynamic batch and length.
// CHECK-LABEL: func.func @gdpa_grad_rms_prologue_weightless
// CHECK-SAME: (%[[DY:.*]]: tensor<?x?x2x8xf32>, %[[Q:.*]]: tensor<?x?x2x16xf32>, %[[K:.*]]: tensor<?x4x2x16xf32>, %[[V:.*]]: tensor<?x4x2x8xf32>, %[[X:.*]]: tensor<?x?x2x8xf32>, %[[R:.*]]: tensor<?x?xf32>)
func.func @gdpa_grad_rms_prologue_weightless(%dy: tensor<?x?x2x8xf32>, %q: tensor<?x?x2x16xf32>,
                                             %k: tensor<?x4x2x16xf32>, %v: tensor<?x4x2x8xf32>,
                                             %x: tensor<?x?x2x8xf32>, %r: tensor<?x?xf32>)
    -> tensor<?x?x2x16xf32> {
  // CHECK: fusion.gdpa_grad %[[DY]], %[[Q]], %[[K]], %[[V]] residual(%[[Q]] : tensor<?x?x2x16xf32>)
  // CHECK-SAME: rms_norm_grad(%[[X]], %[[R]] : tensor<?x?x2x8xf32>, tensor<?x?xf32>)
  // CHECK-NOT: rms_weight
  // CHECK-SAME: {activation = #fusion.activation<silu>, scale = 1.250000e-01 : f32}
  // CHECK-SAME: -> tensor<?x?x2x16xf32>, tensor<?x4x2x16xf32>, tensor<?x4x2x8xf32>{{$}}
  %dq, %dk, %dv = fusion.gdpa_grad %dy, %q, %k, %v residual(%q : tensor<?x?x2x16xf32>)
      rms_norm_grad(%x, %r : tensor<?x?x2x8xf32>, tensor<?x?xf32>)
      {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x8xf32>, tensor<?x?x2x16xf32>, tensor<?x4x2x16xf32>, tensor<?x4x2x8xf32>
      -> tensor<?x?x2x16xf32>, tensor<?x4x2x16xf32>, tensor<?x4x2x8xf32>
  return %dq : tensor<?x?x2x16xf32>
}

// gdpa_grad with dynamic dimensions, f16, identity.
// CHECK-LABEL: func.func @gdpa_grad_dynamic
func.func @gdpa_grad_dynamic(%do: tensor<?x?x2x16xf16>, %q: tensor<?x?x2x16xf16>,
                             %k: tensor<?x?x2x16xf16>, %v: tensor<?x?x2x16xf16>)
    -> tensor<?x?x2x16xf16> {
  // CHECK: fusion.gdpa_grad
  // CHECK-SAME: activation = #fusion.activation<identity>
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
      {activation = #fusion.activation<identity>, scale = 1.0 : f32}
      : tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>
      -> tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>
  return %dq : tensor<?x?x2x16xf16>
}
