// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// RUN: fusion-opt %s --mlir-print-op-generic | fusion-opt | FileCheck %s

// Round trip of fusion.norm_attention and fusion.norm_attention_grad: with
// and without the weights, dense and jagged, static and dynamic shapes.

// Dense norm_attention without weights, bf16.
// CHECK-LABEL: func.func @norm_attention_plain
// CHECK-SAME: (%[[Q:.*]]: tensor<2x128x2x64xbf16>, %[[K:.*]]: tensor<2x128x2x64xbf16>, %[[V:.*]]: tensor<2x128x2x64xbf16>)
func.func @norm_attention_plain(%q: tensor<2x128x2x64xbf16>, %k: tensor<2x128x2x64xbf16>,
                                %v: tensor<2x128x2x64xbf16>)
    -> (tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>) {
  // CHECK: %[[O:.*]], %[[M:.*]], %[[R:.*]], %[[RR:.*]] = fusion.norm_attention %[[Q]], %[[K]], %[[V]]
  // CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, ln_epsilon = 9.765625E-4 : f32, rms_epsilon = 5.000000e-01 : f32, scale = 1.000000e+00 : f32}
  // CHECK-SAME: : tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>
  // CHECK-SAME: -> tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  %out, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32,
       ln_epsilon = 9.765625e-04 : f32, rms_epsilon = 0.5 : f32}
      : tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>
      -> tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  // CHECK: return %[[O]], %[[M]], %[[R]], %[[RR]]
  return %out, %m, %r, %rr
      : tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
}

// Dense norm_attention with ln_weight, ln_bias and rms_weight of size H * D.
// CHECK-LABEL: func.func @norm_attention_weights
// CHECK-SAME: (%[[Q:.*]]: tensor<1x16x2x8xf16>, %[[K:.*]]: tensor<1x4x2x8xf16>, %[[V:.*]]: tensor<1x4x2x8xf16>, %[[LW:.*]]: tensor<16xf16>, %[[LB:.*]]: tensor<16xf16>, %[[RW:.*]]: tensor<16xf32>)
func.func @norm_attention_weights(%q: tensor<1x16x2x8xf16>, %k: tensor<1x4x2x8xf16>,
    %v: tensor<1x4x2x8xf16>, %lw: tensor<16xf16>, %lb: tensor<16xf16>, %rw: tensor<16xf32>)
    -> tensor<1x16x2x8xf16> {
  // CHECK: fusion.norm_attention %[[Q]], %[[K]], %[[V]] ln_weight(%[[LW]] : tensor<16xf16>) ln_bias(%[[LB]] : tensor<16xf16>) rms_weight(%[[RW]] : tensor<16xf32>)
  // CHECK-SAME: activation = #fusion.activation<silu>
  // CHECK-SAME: -> tensor<1x16x2x8xf16>, tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>
  %out, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lw : tensor<16xf16>)
      ln_bias(%lb : tensor<16xf16>) rms_weight(%rw : tensor<16xf32>)
      {activation = #fusion.activation<silu>, scale = 0.125 : f32,
       ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<1x16x2x8xf16>, tensor<1x4x2x8xf16>, tensor<1x4x2x8xf16>
      -> tensor<1x16x2x8xf16>, tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>
  return %out : tensor<1x16x2x8xf16>
}

// Jagged norm_attention (q [T, H, D], i64 offsets): statistics are per token
// [T]; only the rms_weight is given.
// CHECK-LABEL: func.func @norm_attention_jagged_rms_weight
// CHECK-SAME: (%[[Q:.*]]: tensor<100x2x8xf32>, %[[K:.*]]: tensor<4x32x2x8xf32>, %[[V:.*]]: tensor<4x32x2x8xf32>, %[[OFF:.*]]: tensor<5xi64>, %[[RW:.*]]: tensor<16xf32>)
func.func @norm_attention_jagged_rms_weight(%q: tensor<100x2x8xf32>, %k: tensor<4x32x2x8xf32>,
    %v: tensor<4x32x2x8xf32>, %off: tensor<5xi64>, %rw: tensor<16xf32>)
    -> (tensor<100x2x8xf32>, tensor<100xf32>) {
  // CHECK: fusion.norm_attention %[[Q]], %[[K]], %[[V]] offsets(%[[OFF]] : tensor<5xi64>) rms_weight(%[[RW]] : tensor<16xf32>)
  // CHECK-SAME: activation = #fusion.activation<relu>
  // CHECK-SAME: -> tensor<100x2x8xf32>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>
  %out, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<5xi64>)
      rms_weight(%rw : tensor<16xf32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32,
       ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<100x2x8xf32>, tensor<4x32x2x8xf32>, tensor<4x32x2x8xf32>
      -> tensor<100x2x8xf32>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>
  return %out, %rr : tensor<100x2x8xf32>, tensor<100xf32>
}

// norm_attention with dynamic dimensions: a weight of size ? matches H * D.
// CHECK-LABEL: func.func @norm_attention_dynamic
func.func @norm_attention_dynamic(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>,
    %v: tensor<?x?x2x8xbf16>, %lw: tensor<?xbf16>) -> tensor<?x?x2x8xbf16> {
  // CHECK: fusion.norm_attention %{{.*}}, %{{.*}}, %{{.*}} ln_weight(%{{.*}} : tensor<?xbf16>)
  // CHECK-SAME: activation = #fusion.activation<identity>
  // CHECK-SAME: -> tensor<?x?x2x8xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  %out, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lw : tensor<?xbf16>)
      {activation = #fusion.activation<identity>, scale = 1.0 : f32,
       ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
      -> tensor<?x?x2x8xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %out : tensor<?x?x2x8xbf16>
}

// norm_attention saving ln_q and h (for a backward of unfused ops): two
// more results of q's type.
// CHECK-LABEL: func.func @norm_attention_saves
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SAVED:.*]]:2 = fusion.norm_attention
// CHECK-SAME: -> tensor<?x?x2x8xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
// CHECK: return %[[SAVED]]#0, %[[SAVED]]#1
func.func @norm_attention_saves(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>,
    %v: tensor<?x?x2x8xbf16>) -> (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %out, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<identity>, scale = 1.0 : f32,
       ln_epsilon = 0.5 : f32, rms_epsilon = 0.5 : f32}
      : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
      -> tensor<?x?x2x8xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>,
         tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
  return %lnq, %h : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
}

// Dense norm_attention_grad without weights: dq, dk, dv only.
// CHECK-LABEL: func.func @norm_attention_grad_plain
// CHECK-SAME: (%[[DO:.*]]: tensor<2x128x2x64xf32>, %[[Q:.*]]: tensor<2x128x2x64xf32>, %[[K:.*]]: tensor<2x128x2x64xf32>, %[[V:.*]]: tensor<2x128x2x64xf32>, %[[M:.*]]: tensor<2x128xf32>, %[[R:.*]]: tensor<2x128xf32>, %[[RR:.*]]: tensor<2x128xf32>)
func.func @norm_attention_grad_plain(%do: tensor<2x128x2x64xf32>, %q: tensor<2x128x2x64xf32>,
    %k: tensor<2x128x2x64xf32>, %v: tensor<2x128x2x64xf32>, %m: tensor<2x128xf32>,
    %r: tensor<2x128xf32>, %rr: tensor<2x128xf32>)
    -> (tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>) {
  // CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = fusion.norm_attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %[[M]], %[[R]], %[[RR]]
  // CHECK-SAME: {activation = #fusion.activation<gelu_tanh>, scale = 1.000000e+00 : f32}
  // CHECK-SAME: -> tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>{{$}}
  %dq, %dk, %dv = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>,
        tensor<2x128x2x64xf32>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
      -> tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>
  // CHECK: return %[[DQ]], %[[DK]], %[[DV]]
  return %dq, %dk, %dv : tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>
}

// norm_attention_grad with all three weights: three parameter gradients
// [H * D], in the order ln_weight, ln_bias, rms_weight. bf16.
// CHECK-LABEL: func.func @norm_attention_grad_weights
// CHECK-SAME: %[[LW:[^:]*]]: tensor<16xbf16>, %[[LB:[^:]*]]: tensor<16xbf16>, %[[RW:[^:]*]]: tensor<16xbf16>)
func.func @norm_attention_grad_weights(%do: tensor<1x16x2x8xbf16>, %q: tensor<1x16x2x8xbf16>,
    %k: tensor<1x4x2x8xbf16>, %v: tensor<1x4x2x8xbf16>, %m: tensor<1x16xf32>,
    %r: tensor<1x16xf32>, %rr: tensor<1x16xf32>,
    %lw: tensor<16xbf16>, %lb: tensor<16xbf16>, %rw: tensor<16xbf16>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  // CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[PG:.*]]:3 = fusion.norm_attention_grad
  // CHECK-SAME: ln_weight(%[[LW]] : tensor<16xbf16>) ln_bias(%[[LB]] : tensor<16xbf16>) rms_weight(%[[RW]] : tensor<16xbf16>)
  // CHECK-SAME: activation = #fusion.activation<gelu>
  // CHECK-SAME: -> tensor<1x16x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %dq, %dk, %dv, %dlw, %dlb, %drw = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr
      ln_weight(%lw : tensor<16xbf16>) ln_bias(%lb : tensor<16xbf16>) rms_weight(%rw : tensor<16xbf16>)
      {activation = #fusion.activation<gelu>, scale = 0.125 : f32}
      : tensor<1x16x2x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x4x2x8xbf16>,
        tensor<1x4x2x8xbf16>, tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>
      -> tensor<1x16x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16>,
         tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: return %[[PG]]#0, %[[PG]]#1, %[[PG]]#2
  return %dlw, %dlb, %drw : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Jagged norm_attention_grad with i32 offsets and only ln_bias: one
// parameter gradient. f16.
// CHECK-LABEL: func.func @norm_attention_grad_jagged_ln_bias
// CHECK-SAME: %[[OFF:[^:]*]]: tensor<5xi32>, %[[LB:[^:]*]]: tensor<16xf16>)
func.func @norm_attention_grad_jagged_ln_bias(%do: tensor<100x2x8xf16>, %q: tensor<100x2x8xf16>,
    %k: tensor<4x32x2x8xf16>, %v: tensor<4x32x2x8xf16>, %m: tensor<100xf32>,
    %r: tensor<100xf32>, %rr: tensor<100xf32>, %off: tensor<5xi32>, %lb: tensor<16xf16>)
    -> tensor<16xf32> {
  // CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[DLB:.*]] = fusion.norm_attention_grad
  // CHECK-SAME: offsets(%[[OFF]] : tensor<5xi32>) ln_bias(%[[LB]] : tensor<16xf16>)
  // CHECK-SAME: activation = #fusion.activation<silu>
  // CHECK-SAME: -> tensor<100x2x8xf16>, tensor<4x32x2x8xf16>, tensor<4x32x2x8xf16>, tensor<16xf32>
  %dq, %dk, %dv, %dlb = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr
      offsets(%off : tensor<5xi32>) ln_bias(%lb : tensor<16xf16>)
      {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<100x2x8xf16>, tensor<100x2x8xf16>, tensor<4x32x2x8xf16>,
        tensor<4x32x2x8xf16>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>
      -> tensor<100x2x8xf16>, tensor<4x32x2x8xf16>, tensor<4x32x2x8xf16>, tensor<16xf32>
  // CHECK: return %[[DLB]]
  return %dlb : tensor<16xf32>
}

// norm_attention_grad with ln_weight and rms_weight and dynamic shapes.
// CHECK-LABEL: func.func @norm_attention_grad_dynamic
func.func @norm_attention_grad_dynamic(%do: tensor<?x?x2x8xf32>, %q: tensor<?x?x2x8xf32>,
    %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x8xf32>, %m: tensor<?x?xf32>,
    %r: tensor<?x?xf32>, %rr: tensor<?x?xf32>, %lw: tensor<16xf32>, %rw: tensor<?xf32>)
    -> (tensor<16xf32>, tensor<16xf32>) {
  // CHECK: fusion.norm_attention_grad
  // CHECK-SAME: ln_weight(%{{.*}} : tensor<16xf32>) rms_weight(%{{.*}} : tensor<?xf32>)
  // CHECK-SAME: activation = #fusion.activation<identity>
  // CHECK-SAME: tensor<16xf32>, tensor<16xf32>{{$}}
  %dq, %dk, %dv, %dlw, %drw = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr
      ln_weight(%lw : tensor<16xf32>) rms_weight(%rw : tensor<?xf32>)
      {activation = #fusion.activation<identity>, scale = 1.0 : f32}
      : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
        tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
      -> tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<16xf32>, tensor<16xf32>
  return %dlw, %drw : tensor<16xf32>, tensor<16xf32>
}
