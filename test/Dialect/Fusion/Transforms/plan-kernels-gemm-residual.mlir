// RUN: fusion-opt %s -split-input-file "-fusion-plan-kernels=post-residuals=true" | FileCheck %s
// RUN: fusion-opt %s -split-input-file "-fusion-plan-kernels=report=true small-m=false post-residuals=true" -verify-diagnostics -o /dev/null
// post-residuals is opt-in: by default the add after a norm epilogue stays.
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s --check-prefix=DEFAULT
// DEFAULT-NOT: post_residual(
// gemm-residuals=false (fusion-compile --no-fuse) keeps every add:
// RUN: fusion-opt %s -split-input-file "-fusion-plan-kernels=gemm-residuals=false" | FileCheck %s --check-prefix=KEPT
// KEPT-COUNT-19: fusion.add
// KEPT-NOT: residual(

// fusion-plan-kernels folds a fusion.add of a GEMM's result (its only use)
// and a 16-bit tensor of the result's type into the GEMM's residual
// (foldGemmResiduals), with the GEMM on either side of the add: Llama's
// o_proj / down_proj plus the residual stream is one kernel. A matmul's
// bias rides along as col_bias; a fused_matmul with an element-wise
// epilogue (a Lazy Pre-Norm GEMM) takes the residual as it is. Not folded:
// the result has another use, the add broadcasts, a weight gradient, an add inside a loop
// the matmul is outside of (the GEMM would run every iteration), f32 outputs.

// Llama's attention output: h = x + o_proj(a), nn.Linear's weight, any
// token count.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @o_proj
// CHECK-SAME: (%[[A:[^:]*]]: tensor<?x4096xbf16>, %[[W:[^:]*]]: tensor<4096x4096xbf16>, %[[X:[^:]*]]: tensor<?x4096xbf16>)
// CHECK-NEXT: %[[H:.*]] = fusion.fused_matmul %[[A]], %[[W]] residual(%[[X]] : tensor<?x4096xbf16>) {fusion.kernel = {{.*}}, transpose_rhs}
// CHECK-NEXT: return %[[H]]
func.func @o_proj(%a: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>, %x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %h = fusion.add %x, %p : tensor<?x4096xbf16>
  return %h : tensor<?x4096xbf16>
}
}

// -----

// A linear layer with its bias (col_bias), the GEMM the add's lhs, f16.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @bias_lhs
// CHECK-SAME: (%[[A:[^:]*]]: tensor<1000x512xf16>, %[[W:[^:]*]]: tensor<512x768xf16>, %[[B:[^:]*]]: tensor<768xf16>, %[[X:[^:]*]]: tensor<1000x768xf16>)
// CHECK-NEXT: %[[H:.*]] = fusion.fused_matmul %[[A]], %[[W]] residual(%[[X]] : tensor<1000x768xf16>) col_bias(%[[B]] : tensor<768xf16>)
// CHECK-NEXT: return %[[H]]
func.func @bias_lhs(%a: tensor<1000x512xf16>, %w: tensor<512x768xf16>, %b: tensor<768xf16>, %x: tensor<1000x768xf16>) -> tensor<1000x768xf16> {
  %p = fusion.matmul %a, %w bias(%b : tensor<768xf16>) : tensor<1000x512xf16>, tensor<512x768xf16> -> tensor<1000x768xf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %h = fusion.add %p, %x : tensor<1000x768xf16>
  return %h : tensor<1000x768xf16>
}
}

// -----

// GPT-NeoX's parallel residual, mlp + attn + x as its users write it (the
// two projections summed first): reassociated to mlp + (attn + x), so that
// both GEMMs take a residual, attn's x and mlp's attn's sum; no add left.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @parallel_residual
// CHECK-SAME: (%[[A:[^:]*]]: tensor<?x1024xbf16>, %[[WA:[^:]*]]: tensor<1024x1024xbf16>, %[[M:[^:]*]]: tensor<?x4096xbf16>, %[[WM:[^:]*]]: tensor<1024x4096xbf16>, %[[BM:[^:]*]]: tensor<1024xbf16>, %[[X:[^:]*]]: tensor<?x1024xbf16>)
// CHECK-NEXT: %[[T:.*]] = fusion.fused_matmul %[[A]], %[[WA]] residual(%[[X]] : tensor<?x1024xbf16>)
// CHECK-NEXT: %[[H:.*]] = fusion.fused_matmul %[[M]], %[[WM]] residual(%[[T]] : tensor<?x1024xbf16>) col_bias(%[[BM]] : tensor<1024xbf16>)
// CHECK-NEXT: return %[[H]]
func.func @parallel_residual(%a: tensor<?x1024xbf16>, %wa: tensor<1024x1024xbf16>,
                             %m: tensor<?x4096xbf16>, %wm: tensor<1024x4096xbf16>, %bm: tensor<1024xbf16>,
                             %x: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %attn = fusion.matmul %a, %wa {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %mlp = fusion.matmul %m, %wm bias(%bm : tensor<1024xbf16>) {transpose_rhs} : tensor<?x4096xbf16>, tensor<1024x4096xbf16> -> tensor<?x1024xbf16>
  %s = fusion.add %mlp, %attn : tensor<?x1024xbf16>
  // Two folds and two kernels, remarked at the same place (one expected
  // line matches both).
  // expected-remark @below {{parallel residual: the sum of two GEMMs and x reassociated so that each GEMM takes a residual}}
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %h = fusion.add %s, %x : tensor<?x1024xbf16>
  return %h : tensor<?x1024xbf16>
}
}

// -----

// Not reassociated: x + (g1 + g2) where x is a GEMM's own result (the sum
// folds as written: g2 takes g1, then x's GEMM the sum), and where neither
// projection is a plain matmul to rebuild after the partial sum (a norm
// epilogue's output takes no residual: one fold, one add left).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @parallel_x_is_a_gemm
// CHECK-COUNT-2: residual(
// CHECK-NOT: fusion.add
// CHECK: return
func.func @parallel_x_is_a_gemm(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %g1 = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %g2 = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %g3 = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %s = fusion.add %g1, %g2 : tensor<256x256xbf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %h = fusion.add %g3, %s : tensor<256x256xbf16>
  return %h : tensor<256x256xbf16>
}
// CHECK-LABEL: func.func @parallel_after_norm
// CHECK: fusion.fused_matmul {{.*}}epilogue = #fusion.epilogue<rms_norm>
// CHECK: fusion.fused_matmul {{.*}}residual(
// CHECK: fusion.add
func.func @parallel_after_norm(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %x: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %n = fusion.fused_matmul %a, %w {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %g = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %s = fusion.add %g, %n : tensor<256x256xbf16>
  %h = fusion.add %s, %x : tensor<256x256xbf16>
  return %h : tensor<256x256xbf16>
}
}

// -----

// A norm epilogue's output plus x: the sandwich norm's residual stream
// (Gemma 2 / 3, OLMo 2: h = x + rms_norm(o_proj(a))) becomes the GEMM's
// post_residual (with post-residuals=true), added after the norm, the
// stream on either side of the add; a LayerNorm with a linear bias too.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @after_norm
// CHECK-SAME: (%[[A:[^:]*]]: tensor<?x2048xbf16>, %[[W:[^:]*]]: tensor<2304x2048xbf16>, %[[G:[^:]*]]: tensor<2304xf32>, %[[X:[^:]*]]: tensor<?x2304xbf16>)
// CHECK-NEXT: %[[H:.*]] = fusion.fused_matmul %[[A]], %[[W]] norm_weight(%[[G]] : tensor<2304xf32>) post_residual(%[[X]] : tensor<?x2304xbf16>) {epilogue = #fusion.epilogue<rms_norm>
// CHECK-NEXT: return %[[H]]
func.func @after_norm(%a: tensor<?x2048xbf16>, %w: tensor<2304x2048xbf16>, %g: tensor<2304xf32>, %x: tensor<?x2304xbf16>) -> tensor<?x2304xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %n = fusion.fused_matmul %a, %w norm_weight(%g : tensor<2304xf32>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
      : tensor<?x2048xbf16>, tensor<2304x2048xbf16> -> tensor<?x2304xbf16>
  // expected-remark @below {{residual add after the norm folded into the GEMM's norm epilogue (post_residual)}}
  %h = fusion.add %x, %n : tensor<?x2304xbf16>
  return %h : tensor<?x2304xbf16>
}
// CHECK-LABEL: func.func @after_layer_norm
// CHECK: fusion.fused_matmul {{.*}}col_bias({{.*}}post_residual(%arg5 : tensor<1000x768xbf16>) {epilogue = #fusion.epilogue<layer_norm>
// CHECK-NOT: fusion.add
func.func @after_layer_norm(%a: tensor<1000x512xbf16>, %w: tensor<512x768xbf16>, %b: tensor<768xbf16>, %g: tensor<768xbf16>, %beta: tensor<768xbf16>, %x: tensor<1000x768xbf16>) -> tensor<1000x768xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %n = fusion.fused_matmul %a, %w col_bias(%b : tensor<768xbf16>) norm_weight(%g : tensor<768xbf16>) norm_bias(%beta : tensor<768xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x768xbf16> -> tensor<1000x768xbf16>
  // expected-remark @below {{residual add after the norm folded into the GEMM's norm epilogue (post_residual)}}
  %h = fusion.add %n, %x : tensor<1000x768xbf16>
  return %h : tensor<1000x768xbf16>
}
}

// -----

// On sm_100a too (the epilogue warpgroup's last pass over the tensor
// memory adds it).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @after_norm_sm100a
// CHECK: fusion.fused_matmul {{.*}}post_residual(%arg2 : tensor<256x256xbf16>)
// CHECK-NOT: fusion.add
func.func @after_norm_sm100a(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %x: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-remark @below {{GEMM kernel on sm_100a}}
  %n = fusion.fused_matmul %a, %w {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  // expected-remark @below {{residual add after the norm folded into the GEMM's norm epilogue (post_residual)}}
  %h = fusion.add %n, %x : tensor<256x256xbf16>
  return %h : tensor<256x256xbf16>
}
}

// -----

// A Lazy Pre-Norm GEMM (element-wise epilogue) takes the residual in place.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @lazy
// CHECK-SAME: (%[[A:[^:]*]]: tensor<?x1024xbf16>, %[[W:[^:]*]]: tensor<1024x1024xbf16>, %[[X:[^:]*]]: tensor<?x1024xbf16>)
// CHECK-NEXT: %[[H:.*]] = fusion.fused_matmul %[[A]], %[[W]] residual(%[[X]] : tensor<?x1024xbf16>) {fusion.kernel = {{.*}}, prologue = #fusion.prologue<rms_norm>
// CHECK-NEXT: return %[[H]]
func.func @lazy(%a: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %x: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.fused_matmul %a, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs}
      : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  %h = fusion.add %p, %x : tensor<?x1024xbf16>
  return %h : tensor<?x1024xbf16>
}
}

// -----

// Not folded: the GEMM's result is returned too (it would be stored
// anyway); the add broadcasts a row; a norm epilogue's output that is
// returned too; a weight gradient; an add in a loop; an f32 output.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @other_use
// CHECK: fusion.fused_matmul
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @other_use(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %x: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x256xbf16>) {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %h = fusion.add %x, %p : tensor<256x256xbf16>
  return %h, %p : tensor<256x256xbf16>, tensor<256x256xbf16>
}
// CHECK-LABEL: func.func @broadcast
// CHECK: fusion.fused_matmul
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @broadcast(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %b: tensor<256xbf16>) -> tensor<256x256xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %h = fusion.add %p, %b : tensor<256x256xbf16>, tensor<256xbf16>
  return %h : tensor<256x256xbf16>
}
// CHECK-LABEL: func.func @after_norm_other_use
// CHECK: fusion.fused_matmul
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @after_norm_other_use(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %x: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x256xbf16>) {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.fused_matmul %a, %w {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %h = fusion.add %p, %x : tensor<256x256xbf16>
  return %h, %p : tensor<256x256xbf16>, tensor<256x256xbf16>
}
// CHECK-LABEL: func.func @weight_grad
// CHECK: fusion.fused_matmul
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @weight_grad(%dy: tensor<4096x256xbf16>, %a: tensor<4096x512xbf16>, %g: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.matmul %dy, %a {transpose_lhs} : tensor<4096x256xbf16>, tensor<4096x512xbf16> -> tensor<256x512xbf16>
  %h = fusion.add %p, %g : tensor<256x512xbf16>
  return %h : tensor<256x512xbf16>
}
// CHECK-LABEL: func.func @in_loop
// CHECK: fusion.fused_matmul
// CHECK-NOT: residual
// CHECK: scf.for
// CHECK: fusion.add
func.func @in_loop(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %x: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  %h = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (tensor<256x256xbf16>) {
    %s = fusion.add %acc, %p : tensor<256x256xbf16>
    scf.yield %s : tensor<256x256xbf16>
  }
  return %h : tensor<256x256xbf16>
}
// CHECK-LABEL: func.func @f32_output
// CHECK: fusion.fused_matmul
// CHECK-NOT: residual
// CHECK: fusion.add
func.func @f32_output(%a: tensor<256x512xbf16>, %w: tensor<512x256xbf16>, %x: tensor<256x256xf32>) -> tensor<256x256xf32> {
  // expected-remark @below {{GEMM kernel on sm_90a}}
  %p = fusion.matmul %a, %w : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %h = fusion.add %p, %x : tensor<256x256xf32>
  return %h : tensor<256x256xf32>
}
}

// -----

// sm_100a's GEMM takes the residual too.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
// CHECK-LABEL: func.func @sm100
// CHECK-NEXT: fusion.fused_matmul {{.*}} residual(
// CHECK-NEXT: return
func.func @sm100(%a: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %x: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  // expected-remark @below {{residual add folded into the GEMM's epilogue}}
  // expected-remark @below {{GEMM kernel on sm_100a}}
  %h = fusion.add %x, %p : tensor<?x1024xbf16>
  return %h : tensor<?x1024xbf16>
}
}

