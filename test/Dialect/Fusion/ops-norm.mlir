// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// RUN: fusion-opt %s --mlir-print-op-generic | fusion-opt | FileCheck %s

// Round trip of the normalization ops (rms_norm, layer_norm) and their
// gradients, with and without the optional operands and results.

// rms_norm with a weight and the saved rstd, bf16.
// CHECK-LABEL: func.func @rms_norm_weight_rstd
// CHECK-SAME: (%[[X:.*]]: tensor<4096x512xbf16>, %[[W:.*]]: tensor<512xbf16>)
func.func @rms_norm_weight_rstd(%x: tensor<4096x512xbf16>, %w: tensor<512xbf16>)
    -> (tensor<4096x512xbf16>, tensor<4096xf32>) {
  // CHECK: %[[Y:.*]], %[[RSTD:.*]] = fusion.rms_norm %[[X]] weight(%[[W]] : tensor<512xbf16>)
  // CHECK-SAME: {epsilon = 9.765625E-4 : f32}
  // CHECK-SAME: : tensor<4096x512xbf16> -> tensor<4096x512xbf16>, tensor<4096xf32>
  %y, %rstd = fusion.rms_norm %x weight(%w : tensor<512xbf16>) {epsilon = 9.765625e-04 : f32}
      : tensor<4096x512xbf16> -> tensor<4096x512xbf16>, tensor<4096xf32>
  // CHECK: return %[[Y]], %[[RSTD]]
  return %y, %rstd : tensor<4096x512xbf16>, tensor<4096xf32>
}

// rms_norm without weight and without rstd, f32.
// CHECK-LABEL: func.func @rms_norm_plain
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>)
func.func @rms_norm_plain(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  // CHECK: %[[Y:.*]] = fusion.rms_norm %[[X]] {epsilon = 5.000000e-01 : f32}
  // CHECK-SAME: : tensor<16x64xf32> -> tensor<16x64xf32>
  // CHECK-NOT: weight
  %y = fusion.rms_norm %x {epsilon = 0.5 : f32} : tensor<16x64xf32> -> tensor<16x64xf32>
  // CHECK: return %[[Y]]
  return %y : tensor<16x64xf32>
}

// rms_norm of rank 3 with dynamic dimensions, f16; the weight's element type
// may differ from the input's.
// CHECK-LABEL: func.func @rms_norm_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x128xf16>, %[[W:.*]]: tensor<?xf32>)
func.func @rms_norm_dynamic(%x: tensor<?x?x128xf16>, %w: tensor<?xf32>)
    -> (tensor<?x?x128xf16>, tensor<?x?xf32>) {
  // CHECK: fusion.rms_norm %[[X]] weight(%[[W]] : tensor<?xf32>)
  // CHECK-SAME: : tensor<?x?x128xf16> -> tensor<?x?x128xf16>, tensor<?x?xf32>
  %y, %rstd = fusion.rms_norm %x weight(%w : tensor<?xf32>) {epsilon = 0.0 : f32}
      : tensor<?x?x128xf16> -> tensor<?x?x128xf16>, tensor<?x?xf32>
  return %y, %rstd : tensor<?x?x128xf16>, tensor<?x?xf32>
}

// rms_norm of a single row (rank 1): the rstd is a rank-0 tensor.
// CHECK-LABEL: func.func @rms_norm_rank1
func.func @rms_norm_rank1(%x: tensor<64xbf16>) -> (tensor<64xbf16>, tensor<f32>) {
  // CHECK: fusion.rms_norm %{{.*}} {epsilon = 5.000000e-01 : f32}
  // CHECK-SAME: : tensor<64xbf16> -> tensor<64xbf16>, tensor<f32>
  %y, %rstd = fusion.rms_norm %x {epsilon = 0.5 : f32}
      : tensor<64xbf16> -> tensor<64xbf16>, tensor<f32>
  return %y, %rstd : tensor<64xbf16>, tensor<f32>
}

// layer_norm with weight and bias, f16.
// CHECK-LABEL: func.func @layer_norm_weight_bias
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf16>, %[[W:.*]]: tensor<32xf16>, %[[B:.*]]: tensor<32xf16>)
func.func @layer_norm_weight_bias(%x: tensor<8x32xf16>, %w: tensor<32xf16>, %b: tensor<32xf16>)
    -> (tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>) {
  // CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = fusion.layer_norm %[[X]] weight(%[[W]] : tensor<32xf16>) bias(%[[B]] : tensor<32xf16>)
  // CHECK-SAME: {epsilon = 9.765625E-4 : f32}
  // CHECK-SAME: : tensor<8x32xf16> -> tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>
  %y, %mean, %rstd = fusion.layer_norm %x weight(%w : tensor<32xf16>) bias(%b : tensor<32xf16>)
      {epsilon = 9.765625e-04 : f32}
      : tensor<8x32xf16> -> tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>
  // CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]]
  return %y, %mean, %rstd : tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>
}

// layer_norm without weight or bias, f32.
// CHECK-LABEL: func.func @layer_norm_plain
func.func @layer_norm_plain(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // CHECK: fusion.layer_norm %{{.*}} {epsilon = 5.000000e-01 : f32}
  // CHECK-SAME: : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK-NOT: weight
  // CHECK-NOT: bias
  %y, %mean, %rstd = fusion.layer_norm %x {epsilon = 0.5 : f32}
      : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<8x32xf32>
}

// layer_norm with a bias but no weight: the operand segments keep them apart.
// CHECK-LABEL: func.func @layer_norm_bias_only
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xbf16>, %[[B:.*]]: tensor<32xbf16>)
func.func @layer_norm_bias_only(%x: tensor<8x32xbf16>, %b: tensor<32xbf16>) -> tensor<8x32xbf16> {
  // CHECK: fusion.layer_norm %[[X]] bias(%[[B]] : tensor<32xbf16>) {epsilon
  %y, %mean, %rstd = fusion.layer_norm %x bias(%b : tensor<32xbf16>) {epsilon = 0.5 : f32}
      : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<8x32xbf16>
}

// layer_norm with a weight only, dynamic rows.
// CHECK-LABEL: func.func @layer_norm_weight_only_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x32xbf16>, %[[W:.*]]: tensor<32xbf16>)
func.func @layer_norm_weight_only_dynamic(%x: tensor<?x32xbf16>, %w: tensor<32xbf16>)
    -> tensor<?x32xbf16> {
  // CHECK: fusion.layer_norm %[[X]] weight(%[[W]] : tensor<32xbf16>) {epsilon
  // CHECK-SAME: : tensor<?x32xbf16> -> tensor<?x32xbf16>, tensor<?xf32>, tensor<?xf32>
  %y, %mean, %rstd = fusion.layer_norm %x weight(%w : tensor<32xbf16>) {epsilon = 0.5 : f32}
      : tensor<?x32xbf16> -> tensor<?x32xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x32xbf16>
}

// rms_norm_grad with a weight returns the weight gradient.
// CHECK-LABEL: func.func @rms_norm_grad_weight
// CHECK-SAME: (%[[DY:.*]]: tensor<4096x512xbf16>, %[[X:.*]]: tensor<4096x512xbf16>, %[[R:.*]]: tensor<4096xf32>, %[[W:.*]]: tensor<512xbf16>)
func.func @rms_norm_grad_weight(%dy: tensor<4096x512xbf16>, %x: tensor<4096x512xbf16>,
                                %rstd: tensor<4096xf32>, %w: tensor<512xbf16>)
    -> (tensor<4096x512xbf16>, tensor<512xf32>) {
  // CHECK: %[[DX:.*]], %[[DW:.*]] = fusion.rms_norm_grad %[[DY]], %[[X]], %[[R]] weight(%[[W]] : tensor<512xbf16>)
  // CHECK-SAME: : tensor<4096x512xbf16>, tensor<4096x512xbf16>, tensor<4096xf32>
  // CHECK-SAME: -> tensor<4096x512xbf16>, tensor<512xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xbf16>)
      : tensor<4096x512xbf16>, tensor<4096x512xbf16>, tensor<4096xf32>
      -> tensor<4096x512xbf16>, tensor<512xf32>
  // CHECK: return %[[DX]], %[[DW]]
  return %dx, %dw : tensor<4096x512xbf16>, tensor<512xf32>
}

// rms_norm_grad without a weight has no weight gradient, f16.
// CHECK-LABEL: func.func @rms_norm_grad_plain
// CHECK-SAME: (%[[DY:.*]]: tensor<4x?xf16>, %[[X:.*]]: tensor<4x?xf16>, %[[R:.*]]: tensor<4xf32>)
func.func @rms_norm_grad_plain(%dy: tensor<4x?xf16>, %x: tensor<4x?xf16>, %rstd: tensor<4xf32>)
    -> tensor<4x?xf16> {
  // CHECK: %[[DX:.*]] = fusion.rms_norm_grad %[[DY]], %[[X]], %[[R]]
  // CHECK-SAME: : tensor<4x?xf16>, tensor<4x?xf16>, tensor<4xf32> -> tensor<4x?xf16>
  %dx = fusion.rms_norm_grad %dy, %x, %rstd
      : tensor<4x?xf16>, tensor<4x?xf16>, tensor<4xf32> -> tensor<4x?xf16>
  return %dx : tensor<4x?xf16>
}

// layer_norm_grad with a weight and with_bias_grad: dweight then dbias.
// CHECK-LABEL: func.func @layer_norm_grad_weight_bias
// CHECK-SAME: (%[[DY:.*]]: tensor<8x32xf32>, %[[X:.*]]: tensor<8x32xf32>, %[[M:.*]]: tensor<8xf32>, %[[R:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<32xf32>)
func.func @layer_norm_grad_weight_bias(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>,
    %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %w: tensor<32xf32>)
    -> (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) {
  // CHECK: %[[DX:.*]], %[[PG:.*]]:2 = fusion.layer_norm_grad %[[DY]], %[[X]], %[[M]], %[[R]] weight(%[[W]] : tensor<32xf32>)
  // CHECK-SAME: {with_bias_grad}
  // CHECK-SAME: -> tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<32xf32>)
      {with_bias_grad}
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>
      -> tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  // CHECK: return %[[DX]], %[[PG]]#0, %[[PG]]#1
  return %dx, %dw, %db : tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
}

// layer_norm_grad with a weight only: one parameter gradient, bf16.
// CHECK-LABEL: func.func @layer_norm_grad_weight
func.func @layer_norm_grad_weight(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>,
    %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %w: tensor<32xbf16>)
    -> (tensor<8x32xbf16>, tensor<32xf32>) {
  // CHECK: fusion.layer_norm_grad %{{.*}} weight(%{{.*}} : tensor<32xbf16>)
  // CHECK-NOT: with_bias_grad
  // CHECK-SAME: -> tensor<8x32xbf16>, tensor<32xf32>
  %dx, %dw = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<32xbf16>)
      : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8xf32>, tensor<8xf32>
      -> tensor<8x32xbf16>, tensor<32xf32>
  return %dx, %dw : tensor<8x32xbf16>, tensor<32xf32>
}

// layer_norm_grad with with_bias_grad and no weight: dbias only, f16.
// CHECK-LABEL: func.func @layer_norm_grad_bias_only
func.func @layer_norm_grad_bias_only(%dy: tensor<8x32xf16>, %x: tensor<8x32xf16>,
    %mean: tensor<8xf32>, %rstd: tensor<8xf32>) -> (tensor<8x32xf16>, tensor<32xf32>) {
  // CHECK: fusion.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {with_bias_grad}
  // CHECK-SAME: -> tensor<8x32xf16>, tensor<32xf32>
  %dx, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd {with_bias_grad}
      : tensor<8x32xf16>, tensor<8x32xf16>, tensor<8xf32>, tensor<8xf32>
      -> tensor<8x32xf16>, tensor<32xf32>
  return %dx, %db : tensor<8x32xf16>, tensor<32xf32>
}

// layer_norm_grad with neither weight nor bias gradient, dynamic shapes.
// CHECK-LABEL: func.func @layer_norm_grad_plain
func.func @layer_norm_grad_plain(%dy: tensor<?x?xf32>, %x: tensor<?x?xf32>,
    %mean: tensor<?xf32>, %rstd: tensor<?xf32>) -> tensor<?x?xf32> {
  // CHECK: fusion.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
  // CHECK-SAME: -> tensor<?x?xf32>{{$}}
  %dx = fusion.layer_norm_grad %dy, %x, %mean, %rstd
      : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?x?xf32>
  return %dx : tensor<?x?xf32>
}

// rms_norm_grad with a residual gradient of the input gradient's shape and
// element type, and a weight.
// CHECK-LABEL: func.func @rms_norm_grad_residual
// CHECK-SAME: (%[[DY:.*]]: tensor<64x512xbf16>, %[[X:.*]]: tensor<64x512xbf16>, %[[R:.*]]: tensor<64xf32>, %[[W:.*]]: tensor<512xbf16>, %[[RES:.*]]: tensor<64x512xbf16>)
func.func @rms_norm_grad_residual(%dy: tensor<64x512xbf16>, %x: tensor<64x512xbf16>,
    %rstd: tensor<64xf32>, %w: tensor<512xbf16>, %res: tensor<64x512xbf16>)
    -> (tensor<64x512xbf16>, tensor<512xf32>) {
  // CHECK: %[[DX:.*]], %[[DW:.*]] = fusion.rms_norm_grad %[[DY]], %[[X]], %[[R]] weight(%[[W]] : tensor<512xbf16>) residual(%[[RES]] : tensor<64x512xbf16>)
  // CHECK-SAME: -> tensor<64x512xbf16>, tensor<512xf32>
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xbf16>)
      residual(%res : tensor<64x512xbf16>)
      : tensor<64x512xbf16>, tensor<64x512xbf16>, tensor<64xf32> -> tensor<64x512xbf16>, tensor<512xf32>
  // CHECK: return %[[DX]], %[[DW]]
  return %dx, %dw : tensor<64x512xbf16>, tensor<512xf32>
}

// rms_norm_grad with a residual and no weight, dynamic rows.
// CHECK-LABEL: func.func @rms_norm_grad_residual_plain
func.func @rms_norm_grad_residual_plain(%dy: tensor<?x64xf16>, %x: tensor<?x64xf16>,
    %rstd: tensor<?xf32>, %res: tensor<?x64xf16>) -> tensor<?x64xf16> {
  // CHECK: fusion.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} residual(%{{.*}} : tensor<?x64xf16>) :
  // CHECK-NOT: weight
  // CHECK-SAME: -> tensor<?x64xf16>{{$}}
  %dx = fusion.rms_norm_grad %dy, %x, %rstd residual(%res : tensor<?x64xf16>)
      : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?xf32> -> tensor<?x64xf16>
  return %dx : tensor<?x64xf16>
}

// layer_norm_grad with a weight, with_bias_grad and an f32 residual beside
// bf16 data (the residual's element type may differ).
// CHECK-LABEL: func.func @layer_norm_grad_residual
// CHECK-SAME: %[[W:[^:]*]]: tensor<32xbf16>, %[[RES:.*]]: tensor<8x32xf32>)
func.func @layer_norm_grad_residual(%dy: tensor<8x32xbf16>, %x: tensor<8x32xbf16>,
    %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %w: tensor<32xbf16>, %res: tensor<8x32xf32>)
    -> (tensor<8x32xbf16>, tensor<32xf32>, tensor<32xf32>) {
  // CHECK: %[[DX:.*]], %[[PG:.*]]:2 = fusion.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} weight(%[[W]] : tensor<32xbf16>) residual(%[[RES]] : tensor<8x32xf32>)
  // CHECK-SAME: {with_bias_grad}
  // CHECK-SAME: -> tensor<8x32xbf16>, tensor<32xf32>, tensor<32xf32>
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<32xbf16>)
      residual(%res : tensor<8x32xf32>) {with_bias_grad}
      : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8xf32>, tensor<8xf32>
      -> tensor<8x32xbf16>, tensor<32xf32>, tensor<32xf32>
  // CHECK: return %[[DX]], %[[PG]]#0, %[[PG]]#1
  return %dx, %dw, %db : tensor<8x32xbf16>, tensor<32xf32>, tensor<32xf32>
}

// rms_norm_grad reading x_hat (normalized_input) instead of x.
// CHECK-LABEL: func.func @rms_norm_grad_normalized_input
func.func @rms_norm_grad_normalized_input(%dy: tensor<?x512xbf16>, %xh: tensor<?x512xbf16>,
    %rstd: tensor<?xf32>, %w: tensor<512xbf16>) -> (tensor<?x512xbf16>, tensor<512xf32>) {
  // CHECK: fusion.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} weight(%{{.*}} : tensor<512xbf16>) {normalized_input}
  %dx, %dw = fusion.rms_norm_grad %dy, %xh, %rstd weight(%w : tensor<512xbf16>) {normalized_input}
      : tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?xf32> -> tensor<?x512xbf16>, tensor<512xf32>
  return %dx, %dw : tensor<?x512xbf16>, tensor<512xf32>
}
