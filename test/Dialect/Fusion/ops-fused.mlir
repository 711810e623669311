// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// RUN: fusion-opt %s --mlir-print-op-generic | fusion-opt | FileCheck %s

// Round trip of fusion.fused_matmul: every prologue and every epilogue with
// the operands and extra results it takes, transpose_rhs, and dynamic shapes.

// No prologue, no epilogue: the default kinds are not printed.
// CHECK-LABEL: func.func @fused_plain
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<32x16xbf16>)
func.func @fused_plain(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<64x16xbf16> {
  // CHECK: %[[Y:.*]] = fusion.fused_matmul %[[A]], %[[B]] : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  %y = fusion.fused_matmul %a, %b : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  // CHECK: return %[[Y]]
  return %y : tensor<64x16xbf16>
}

// Explicit default kinds are elided by the printer.
// CHECK-LABEL: func.func @fused_explicit_none
func.func @fused_explicit_none(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} : tensor<64x32xf32>
  // CHECK-NOT: prologue
  // CHECK-NOT: epilogue
  %y = fusion.fused_matmul %a, %b
      {prologue = #fusion.prologue<none>, epilogue = #fusion.epilogue<none>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  // CHECK: return
  return %y : tensor<64x16xf32>
}

// Prologue rms_norm (Lazy Pre-Norm) with a residual, f16.
// CHECK-LABEL: func.func @fused_prologue_rms_norm
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xf16>, %[[B:.*]]: tensor<32x16xf16>, %[[RES:.*]]: tensor<64x16xf16>)
func.func @fused_prologue_rms_norm(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>,
                                   %res: tensor<64x16xf16>) -> tensor<64x16xf16> {
  // CHECK: fusion.fused_matmul %[[A]], %[[B]] residual(%[[RES]] : tensor<64x16xf16>)
  // CHECK-SAME: {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 9.765625E-4 : f32}
  // CHECK-SAME: : tensor<64x32xf16>, tensor<32x16xf16> -> tensor<64x16xf16>
  %y = fusion.fused_matmul %a, %b residual(%res : tensor<64x16xf16>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 9.765625e-04 : f32}
      : tensor<64x32xf16>, tensor<32x16xf16> -> tensor<64x16xf16>
  return %y : tensor<64x16xf16>
}

// Prologue layer_norm with the folded bias as col_bias, and transpose_rhs.
// CHECK-LABEL: func.func @fused_prologue_layer_norm_col_bias
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<16x32xbf16>, %[[CB:.*]]: tensor<16xf32>)
func.func @fused_prologue_layer_norm_col_bias(%a: tensor<64x32xbf16>, %b: tensor<16x32xbf16>,
                                              %cb: tensor<16xf32>) -> tensor<64x16xbf16> {
  // CHECK: fusion.fused_matmul %[[A]], %[[B]] col_bias(%[[CB]] : tensor<16xf32>)
  // CHECK-SAME: prologue = #fusion.prologue<layer_norm>
  // CHECK-SAME: transpose_rhs
  // CHECK-SAME: : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>
  %y = fusion.fused_matmul %a, %b col_bias(%cb : tensor<16xf32>)
      {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 0.5 : f32, transpose_rhs}
      : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>
  return %y : tensor<64x16xbf16>
}

// Prologue layer_norm with B's column sums given as col_sum (f32 [N]).
// CHECK-LABEL: func.func @fused_prologue_layer_norm_col_sum
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<32x16xbf16>, %[[CS:.*]]: tensor<16xf32>)
func.func @fused_prologue_layer_norm_col_sum(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>,
                                             %cs: tensor<16xf32>) -> tensor<64x16xbf16> {
  // CHECK: fusion.fused_matmul %[[A]], %[[B]] col_sum(%[[CS]] : tensor<16xf32>)
  // CHECK-SAME: prologue = #fusion.prologue<layer_norm>
  // CHECK-SAME: : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  %y = fusion.fused_matmul %a, %b col_sum(%cs : tensor<16xf32>)
      {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 0.5 : f32}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return %y : tensor<64x16xbf16>
}

// Epilogue row_scale takes an f32 row_scale of shape [M].
// CHECK-LABEL: func.func @fused_epilogue_row_scale
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<32x16xbf16>, %[[S:.*]]: tensor<64xf32>)
func.func @fused_epilogue_row_scale(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>,
                                    %s: tensor<64xf32>) -> tensor<64x16xbf16> {
  // CHECK: fusion.fused_matmul %[[A]], %[[B]] row_scale(%[[S]] : tensor<64xf32>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<row_scale>}
  %y = fusion.fused_matmul %a, %b row_scale(%s : tensor<64xf32>)
      {epilogue = #fusion.epilogue<row_scale>}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return %y : tensor<64x16xbf16>
}

// Epilogue rms_norm with residual, norm_weight and save_stats: rstd [M].
// CHECK-LABEL: func.func @fused_epilogue_rms_norm_save_stats
// CHECK-SAME: (%[[A:.*]]: tensor<8192x512xbf16>, %[[B:.*]]: tensor<512x512xbf16>, %[[RES:.*]]: tensor<8192x512xbf16>, %[[W:.*]]: tensor<512xbf16>)
func.func @fused_epilogue_rms_norm_save_stats(%a: tensor<8192x512xbf16>, %b: tensor<512x512xbf16>,
    %res: tensor<8192x512xbf16>, %w: tensor<512xbf16>) -> (tensor<8192x512xbf16>, tensor<8192xf32>) {
  // CHECK: %[[Y:.*]], %[[RSTD:.*]] = fusion.fused_matmul %[[A]], %[[B]] residual(%[[RES]] : tensor<8192x512xbf16>) norm_weight(%[[W]] : tensor<512xbf16>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<rms_norm>, epsilon = 9.765625E-4 : f32, save_stats}
  // CHECK-SAME: : tensor<8192x512xbf16>, tensor<512x512xbf16> -> tensor<8192x512xbf16>, tensor<8192xf32>
  %y, %rstd = fusion.fused_matmul %a, %b residual(%res : tensor<8192x512xbf16>)
      norm_weight(%w : tensor<512xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 9.765625e-04 : f32, save_stats}
      : tensor<8192x512xbf16>, tensor<512x512xbf16> -> tensor<8192x512xbf16>, tensor<8192xf32>
  // CHECK: return %[[Y]], %[[RSTD]]
  return %y, %rstd : tensor<8192x512xbf16>, tensor<8192xf32>
}

// Epilogue rms_norm without save_stats and without weight: no extra result.
// CHECK-LABEL: func.func @fused_epilogue_rms_norm_plain
func.func @fused_epilogue_rms_norm_plain(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>)
    -> tensor<64x16xf32> {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} {epilogue = #fusion.epilogue<rms_norm>, epsilon = 5.000000e-01 : f32}
  // CHECK-SAME: -> tensor<64x16xf32>{{$}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// Epilogue layer_norm with norm_weight, norm_bias and save_stats: mean, rstd.
// CHECK-LABEL: func.func @fused_epilogue_layer_norm_save_stats
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<32x16xbf16>, %[[W:.*]]: tensor<16xbf16>, %[[NB:.*]]: tensor<16xbf16>)
func.func @fused_epilogue_layer_norm_save_stats(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>,
    %w: tensor<16xbf16>, %nb: tensor<16xbf16>)
    -> (tensor<64x16xbf16>, tensor<64xf32>, tensor<64xf32>) {
  // CHECK: %[[Y:.*]], %[[EX:.*]]:2 = fusion.fused_matmul %[[A]], %[[B]] norm_weight(%[[W]] : tensor<16xbf16>) norm_bias(%[[NB]] : tensor<16xbf16>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<layer_norm>, epsilon = 5.000000e-01 : f32, save_stats}
  // CHECK-SAME: -> tensor<64x16xbf16>, tensor<64xf32>, tensor<64xf32>
  %y, %mean, %rstd = fusion.fused_matmul %a, %b norm_weight(%w : tensor<16xbf16>)
      norm_bias(%nb : tensor<16xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32, save_stats}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>, tensor<64xf32>, tensor<64xf32>
  // CHECK: return %[[Y]], %[[EX]]#0, %[[EX]]#1
  return %y, %mean, %rstd : tensor<64x16xbf16>, tensor<64xf32>, tensor<64xf32>
}

// Epilogue layer_norm without save_stats.
// CHECK-LABEL: func.func @fused_epilogue_layer_norm_plain
func.func @fused_epilogue_layer_norm_plain(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>)
    -> tensor<64x16xf16> {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} {epilogue = #fusion.epilogue<layer_norm>, epsilon = 5.000000e-01 : f32}
  // CHECK-SAME: -> tensor<64x16xf16>{{$}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32}
      : tensor<64x32xf16>, tensor<32x16xf16> -> tensor<64x16xf16>
  return %y : tensor<64x16xf16>
}

// Epilogue rms_norm_grad with norm_weight: dweight [N]; the dgrad GEMM uses
// transpose_rhs and the skip-connection gradient enters as residual.
// CHECK-LABEL: func.func @fused_epilogue_rms_norm_grad_weight
// CHECK-SAME: (%[[DY:.*]]: tensor<64x32xbf16>, %[[W:.*]]: tensor<16x32xbf16>, %[[RES:.*]]: tensor<64x16xbf16>, %[[NW:.*]]: tensor<16xbf16>, %[[X:.*]]: tensor<64x16xbf16>, %[[R:.*]]: tensor<64xf32>)
func.func @fused_epilogue_rms_norm_grad_weight(%dy: tensor<64x32xbf16>, %w: tensor<16x32xbf16>,
    %res: tensor<64x16xbf16>, %nw: tensor<16xbf16>, %x: tensor<64x16xbf16>, %rstd: tensor<64xf32>)
    -> (tensor<64x16xbf16>, tensor<16xf32>) {
  // CHECK: %[[DX:.*]], %[[DW:.*]] = fusion.fused_matmul %[[DY]], %[[W]] residual(%[[RES]] : tensor<64x16xbf16>) norm_weight(%[[NW]] : tensor<16xbf16>) norm_input(%[[X]] : tensor<64x16xbf16>) rstd(%[[R]] : tensor<64xf32>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<rms_norm_grad>, transpose_rhs}
  // CHECK-SAME: -> tensor<64x16xbf16>, tensor<16xf32>
  %dx, %dw = fusion.fused_matmul %dy, %w residual(%res : tensor<64x16xbf16>)
      norm_weight(%nw : tensor<16xbf16>) norm_input(%x : tensor<64x16xbf16>)
      rstd(%rstd : tensor<64xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, transpose_rhs}
      : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>, tensor<16xf32>
  // CHECK: return %[[DX]], %[[DW]]
  return %dx, %dw : tensor<64x16xbf16>, tensor<16xf32>
}

// Epilogue rms_norm_grad with its row sum from a row dot: row_dot [M, K]
// (the next layer's output, which has A's shape).
// CHECK-LABEL: func.func @fused_epilogue_rms_norm_grad_row_dot
// CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} norm_weight(%{{.*}} : tensor<16xbf16>) norm_input(%{{.*}} : tensor<?x16xbf16>) rstd(%{{.*}} : tensor<?xf32>) row_dot(%[[Y:.*]] : tensor<?x32xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>}
func.func @fused_epilogue_rms_norm_grad_row_dot(%dy: tensor<?x32xbf16>, %w: tensor<32x16xbf16>,
    %nw: tensor<16xbf16>, %x: tensor<?x16xbf16>, %rstd: tensor<?xf32>, %y: tensor<?x32xbf16>)
    -> (tensor<?x16xbf16>, tensor<16xf32>) {
  %dx, %dw = fusion.fused_matmul %dy, %w norm_weight(%nw : tensor<16xbf16>)
      norm_input(%x : tensor<?x16xbf16>) rstd(%rstd : tensor<?xf32>)
      row_dot(%y : tensor<?x32xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<?x32xbf16>, tensor<32x16xbf16> -> tensor<?x16xbf16>, tensor<16xf32>
  return %dx, %dw : tensor<?x16xbf16>, tensor<16xf32>
}

// Epilogue rms_norm_grad without norm_weight: no parameter gradient.
// CHECK-LABEL: func.func @fused_epilogue_rms_norm_grad_plain
func.func @fused_epilogue_rms_norm_grad_plain(%dy: tensor<64x32xf32>, %w: tensor<32x16xf32>,
    %x: tensor<64x16xf32>, %rstd: tensor<64xf32>) -> tensor<64x16xf32> {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} norm_input(%{{.*}} : tensor<64x16xf32>) rstd(%{{.*}} : tensor<64xf32>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<rms_norm_grad>}
  // CHECK-SAME: -> tensor<64x16xf32>{{$}}
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<64x16xf32>) rstd(%rstd : tensor<64xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  return %dx : tensor<64x16xf32>
}

// Epilogue layer_norm_grad with norm_weight and with_bias_grad: dweight, dbias.
// CHECK-LABEL: func.func @fused_epilogue_layer_norm_grad_weight_bias
// CHECK-SAME: (%[[DY:.*]]: tensor<64x32xf16>, %[[W:.*]]: tensor<32x16xf16>, %[[NW:.*]]: tensor<16xf16>, %[[X:.*]]: tensor<64x16xf16>, %[[M:.*]]: tensor<64xf32>, %[[R:.*]]: tensor<64xf32>)
func.func @fused_epilogue_layer_norm_grad_weight_bias(%dy: tensor<64x32xf16>, %w: tensor<32x16xf16>,
    %nw: tensor<16xf16>, %x: tensor<64x16xf16>, %mean: tensor<64xf32>, %rstd: tensor<64xf32>)
    -> (tensor<64x16xf16>, tensor<16xf32>, tensor<16xf32>) {
  // CHECK: %[[DX:.*]], %[[PG:.*]]:2 = fusion.fused_matmul %[[DY]], %[[W]] norm_weight(%[[NW]] : tensor<16xf16>) norm_input(%[[X]] : tensor<64x16xf16>) mean(%[[M]] : tensor<64xf32>) rstd(%[[R]] : tensor<64xf32>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
  // CHECK-SAME: -> tensor<64x16xf16>, tensor<16xf32>, tensor<16xf32>
  %dx, %dw, %db = fusion.fused_matmul %dy, %w norm_weight(%nw : tensor<16xf16>)
      norm_input(%x : tensor<64x16xf16>) mean(%mean : tensor<64xf32>) rstd(%rstd : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
      : tensor<64x32xf16>, tensor<32x16xf16> -> tensor<64x16xf16>, tensor<16xf32>, tensor<16xf32>
  // CHECK: return %[[DX]], %[[PG]]#0, %[[PG]]#1
  return %dx, %dw, %db : tensor<64x16xf16>, tensor<16xf32>, tensor<16xf32>
}

// Epilogue layer_norm_grad with with_bias_grad only: dbias.
// CHECK-LABEL: func.func @fused_epilogue_layer_norm_grad_bias_only
func.func @fused_epilogue_layer_norm_grad_bias_only(%dy: tensor<64x32xbf16>, %w: tensor<32x16xbf16>,
    %x: tensor<64x16xbf16>, %mean: tensor<64xf32>, %rstd: tensor<64xf32>)
    -> (tensor<64x16xbf16>, tensor<16xf32>) {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} norm_input(%{{.*}} : tensor<64x16xbf16>) mean(%{{.*}} : tensor<64xf32>) rstd(%{{.*}} : tensor<64xf32>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
  // CHECK-SAME: -> tensor<64x16xbf16>, tensor<16xf32>
  %dx, %db = fusion.fused_matmul %dy, %w norm_input(%x : tensor<64x16xbf16>)
      mean(%mean : tensor<64xf32>) rstd(%rstd : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>, tensor<16xf32>
  return %dx, %db : tensor<64x16xbf16>, tensor<16xf32>
}

// Epilogue layer_norm_grad without weight or bias gradient.
// CHECK-LABEL: func.func @fused_epilogue_layer_norm_grad_plain
func.func @fused_epilogue_layer_norm_grad_plain(%dy: tensor<64x32xbf16>, %w: tensor<32x16xbf16>,
    %x: tensor<64x16xbf16>, %mean: tensor<64xf32>, %rstd: tensor<64xf32>) -> tensor<64x16xbf16> {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: {epilogue = #fusion.epilogue<layer_norm_grad>}
  // CHECK-SAME: -> tensor<64x16xbf16>{{$}}
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<64x16xbf16>)
      mean(%mean : tensor<64xf32>) rstd(%rstd : tensor<64xf32>)
      {epilogue = #fusion.epilogue<layer_norm_grad>}
      : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return %dx : tensor<64x16xbf16>
}

// A prologue and an epilogue together, with every forward operand
// (residual, col_bias, norm_weight, norm_bias) and dynamic dimensions.
// CHECK-LABEL: func.func @fused_prologue_and_epilogue_dynamic
// CHECK-SAME: (%[[A:.*]]: tensor<?x32xbf16>, %[[B:.*]]: tensor<32x?xbf16>, %[[RES:.*]]: tensor<?x?xbf16>, %[[CB:.*]]: tensor<?xbf16>, %[[W:.*]]: tensor<?xf32>, %[[NB:.*]]: tensor<?xf32>)
func.func @fused_prologue_and_epilogue_dynamic(%a: tensor<?x32xbf16>, %b: tensor<32x?xbf16>,
    %res: tensor<?x?xbf16>, %cb: tensor<?xbf16>, %w: tensor<?xf32>, %nb: tensor<?xf32>)
    -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) {
  // CHECK: fusion.fused_matmul %[[A]], %[[B]] residual(%[[RES]] : tensor<?x?xbf16>) col_bias(%[[CB]] : tensor<?xbf16>) norm_weight(%[[W]] : tensor<?xf32>) norm_bias(%[[NB]] : tensor<?xf32>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<layer_norm>, epsilon = 5.000000e-01 : f32, prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 2.500000e-01 : f32, save_stats}
  // CHECK-SAME: : tensor<?x32xbf16>, tensor<32x?xbf16> -> tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
  %y, %mean, %rstd = fusion.fused_matmul %a, %b residual(%res : tensor<?x?xbf16>)
      col_bias(%cb : tensor<?xbf16>) norm_weight(%w : tensor<?xf32>) norm_bias(%nb : tensor<?xf32>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 0.25 : f32,
       epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32, save_stats}
      : tensor<?x32xbf16>, tensor<32x?xbf16> -> tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y, %mean, %rstd : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
}

// save_norm_input: the norm's input as a second result, before the
// statistics (a training step's forward keeps it for the backward).
// CHECK-LABEL: func.func @fused_save_norm_input
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<16x32xbf16>, %[[RES:.*]]: tensor<64x16xbf16>, %[[W:.*]]: tensor<16xbf16>, %[[NB:.*]]: tensor<16xbf16>)
func.func @fused_save_norm_input(%a: tensor<64x32xbf16>, %b: tensor<16x32xbf16>,
    %res: tensor<64x16xbf16>, %w: tensor<16xbf16>, %nb: tensor<16xbf16>)
    -> (tensor<64x16xbf16>, tensor<64x16xbf16>, tensor<64xf32>, tensor<64xf32>) {
  // CHECK: %[[Y:.*]], %[[H:.*]], %[[S:.*]]:2 = fusion.fused_matmul %[[A]], %[[B]] residual(%[[RES]] : tensor<64x16xbf16>) norm_weight(%[[W]] : tensor<16xbf16>) norm_bias(%[[NB]] : tensor<16xbf16>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<layer_norm>, epsilon = 5.000000e-01 : f32, save_norm_input, save_stats, transpose_rhs}
  // CHECK-SAME: : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16> saved_norm_input(tensor<64x16xbf16>), tensor<64xf32>, tensor<64xf32>
  %y, %h, %mean, %rstd = fusion.fused_matmul %a, %b residual(%res : tensor<64x16xbf16>)
      norm_weight(%w : tensor<16xbf16>) norm_bias(%nb : tensor<16xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 0.5 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16> saved_norm_input(tensor<64x16xbf16>), tensor<64xf32>, tensor<64xf32>
  // CHECK: return %[[Y]], %[[H]], %[[S]]#0, %[[S]]#1
  return %y, %h, %mean, %rstd : tensor<64x16xbf16>, tensor<64x16xbf16>, tensor<64xf32>, tensor<64xf32>
}

// post_residual: added to the norm's output (a sandwich norm's residual
// stream, x + rms_norm(o_proj(a))), beside a residual that enters the norm.
// CHECK-LABEL: func.func @fused_post_residual
// CHECK-SAME: (%[[A:.*]]: tensor<?x32xbf16>, %[[B:.*]]: tensor<16x32xbf16>, %[[W:.*]]: tensor<16xf32>, %[[R:.*]]: tensor<?x16xbf16>, %[[X:.*]]: tensor<?x16xbf16>)
func.func @fused_post_residual(%a: tensor<?x32xbf16>, %b: tensor<16x32xbf16>, %w: tensor<16xf32>,
    %r: tensor<?x16xbf16>, %x: tensor<?x16xbf16>) -> tensor<?x16xbf16> {
  // CHECK: fusion.fused_matmul %[[A]], %[[B]] residual(%[[R]] : tensor<?x16xbf16>) norm_weight(%[[W]] : tensor<16xf32>) post_residual(%[[X]] : tensor<?x16xbf16>)
  // CHECK-SAME: {epilogue = #fusion.epilogue<rms_norm>, epsilon = 9.99999997E-7 : f32, transpose_rhs}
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<?x16xbf16>) norm_weight(%w : tensor<16xf32>)
      post_residual(%x : tensor<?x16xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
      : tensor<?x32xbf16>, tensor<16x32xbf16> -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// Without statistics, f32.
// CHECK-LABEL: func.func @fused_save_norm_input_no_stats
func.func @fused_save_norm_input_no_stats(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>)
    -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  // CHECK: fusion.fused_matmul
  // CHECK-SAME: -> tensor<64x16xf32> saved_norm_input(tensor<64x16xf32>){{$}}
  %y, %h = fusion.fused_matmul %a, %b
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 0.5 : f32, save_norm_input}
      : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32> saved_norm_input(tensor<64x16xf32>)
  return %y, %h : tensor<64x16xf32>, tensor<64x16xf32>
}

// A per-head LayerNorm over groups of 64 columns (norm_group_size): [64]
// parameters, statistics per row and group, a dynamic M.
// CHECK-LABEL: func.func @fused_norm_groups
func.func @fused_norm_groups(%a: tensor<?x32xbf16>, %b: tensor<256x32xbf16>, %w: tensor<64xbf16>, %nb: tensor<64xbf16>)
    -> (tensor<?x256xbf16>, tensor<?x4xf32>, tensor<?x4xf32>) {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} norm_weight(%{{.*}} : tensor<64xbf16>) norm_bias(%{{.*}} : tensor<64xbf16>)
  // CHECK-SAME: norm_group_size = 64 : i64
  // CHECK-SAME: -> tensor<?x256xbf16>, tensor<?x4xf32>, tensor<?x4xf32>
  %y, %m, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<64xbf16>) norm_bias(%nb : tensor<64xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 64 : i64, save_stats, transpose_rhs}
      : tensor<?x32xbf16>, tensor<256x32xbf16> -> tensor<?x256xbf16>, tensor<?x4xf32>, tensor<?x4xf32>
  return %y, %m, %r : tensor<?x256xbf16>, tensor<?x4xf32>, tensor<?x4xf32>
}

// A weight gradient with its columns scaled (col_scale): dy^T x_hat diag(g).
// CHECK-LABEL: func.func @fused_weight_grad_col_scale
func.func @fused_weight_grad_col_scale(%dy: tensor<?x128xbf16>, %xh: tensor<?x256xbf16>,
    %g: tensor<256xbf16>) -> tensor<128x256xbf16> {
  // CHECK: fusion.fused_matmul %{{.*}}, %{{.*}} col_scale(%{{.*}} : tensor<256xbf16>) {transpose_lhs}
  // CHECK-SAME: : tensor<?x128xbf16>, tensor<?x256xbf16> -> tensor<128x256xbf16>
  %dw = fusion.fused_matmul %dy, %xh col_scale(%g : tensor<256xbf16>) {transpose_lhs}
      : tensor<?x128xbf16>, tensor<?x256xbf16> -> tensor<128x256xbf16>
  return %dw : tensor<128x256xbf16>
}
