// fusion-plan-kernels' fold of a GEMM's result plus x into the GEMM's
// residual (foldGemmResiduals) keeps the program's values: each function
// runs on the CPU on the same random inputs before and after the pass
// (acc + x rounded once to bf16 where the matmul rounded acc first: within
// a bf16 ulp of the sum).
// RUN: fusion-runner %s -e o_proj --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e bias_lhs --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=1e-2 | FileCheck %s
// RUN: fusion-runner %s -e lazy --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=1e-2 | FileCheck %s
// A parallel residual (GPT-NeoX: mlp + attn + x), reassociated so that both
// GEMMs take a residual (each sum rounded once more: within the tolerance).
// RUN: fusion-runner %s -e parallel --after-passes=fusion-plan-kernels --atol=3e-2 --rtol=1e-2 | FileCheck %s
// RUN: not fusion-runner %s -e parallel --compare=parallel_without_x --atol=3e-2 --rtol=1e-2 | FileCheck %s --check-prefix=FAIL
// The rewrite happened, in every function:
// RUN: fusion-opt %s -fusion-plan-kernels | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the residual left out differs.
// RUN: not fusion-runner %s -e o_proj --compare=o_proj_without --atol=3e-2 --rtol=1e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-COUNT-6: residual(
// IR-NOT: residual(
// IR-NOT: fusion.add

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// h = x + o_proj(a), nn.Linear's [out, in] weight.
func.func @o_proj(%a: tensor<33x128xbf16>, %w: tensor<64x128xbf16>, %x: tensor<33x64xbf16>) -> tensor<33x64xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<33x128xbf16>, tensor<64x128xbf16> -> tensor<33x64xbf16>
  %h = fusion.add %x, %p : tensor<33x64xbf16>
  return %h : tensor<33x64xbf16>
}
func.func @o_proj_without(%a: tensor<33x128xbf16>, %w: tensor<64x128xbf16>, %x: tensor<33x64xbf16>) -> tensor<33x64xbf16> {
  %p = fusion.matmul %a, %w {transpose_rhs} : tensor<33x128xbf16>, tensor<64x128xbf16> -> tensor<33x64xbf16>
  return %p : tensor<33x64xbf16>
}
// A linear layer with its bias, the GEMM the add's lhs.
func.func @bias_lhs(%a: tensor<17x96xbf16>, %w: tensor<96x80xbf16>, %b: tensor<80xbf16>, %x: tensor<17x80xbf16>) -> tensor<17x80xbf16> {
  %p = fusion.matmul %a, %w bias(%b : tensor<80xbf16>) : tensor<17x96xbf16>, tensor<96x80xbf16> -> tensor<17x80xbf16>
  %h = fusion.add %p, %x : tensor<17x80xbf16>
  return %h : tensor<17x80xbf16>
}
// A Lazy Pre-Norm GEMM: rms_norm(a) @ w + x.
func.func @lazy(%a: tensor<9x128xbf16>, %w: tensor<64x128xbf16>, %x: tensor<9x64xbf16>) -> tensor<9x64xbf16> {
  %p = fusion.fused_matmul %a, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32, transpose_rhs}
      : tensor<9x128xbf16>, tensor<64x128xbf16> -> tensor<9x64xbf16>
  %h = fusion.add %p, %x : tensor<9x64xbf16>
  return %h : tensor<9x64xbf16>
}
// GPT-NeoX's parallel residual, as its users write it: the MLP's
// projection (with its bias) plus the attention's, plus the residual x.
func.func @parallel(%a: tensor<33x128xbf16>, %wa: tensor<64x128xbf16>, %m: tensor<33x96xbf16>,
                    %wm: tensor<64x96xbf16>, %bm: tensor<64xbf16>, %x: tensor<33x64xbf16>) -> tensor<33x64xbf16> {
  %attn = fusion.matmul %a, %wa {transpose_rhs} : tensor<33x128xbf16>, tensor<64x128xbf16> -> tensor<33x64xbf16>
  %mlp = fusion.matmul %m, %wm bias(%bm : tensor<64xbf16>) {transpose_rhs} : tensor<33x96xbf16>, tensor<64x96xbf16> -> tensor<33x64xbf16>
  %s = fusion.add %mlp, %attn : tensor<33x64xbf16>
  %h = fusion.add %s, %x : tensor<33x64xbf16>
  return %h : tensor<33x64xbf16>
}
func.func @parallel_without_x(%a: tensor<33x128xbf16>, %wa: tensor<64x128xbf16>, %m: tensor<33x96xbf16>,
                              %wm: tensor<64x96xbf16>, %bm: tensor<64xbf16>, %x: tensor<33x64xbf16>) -> tensor<33x64xbf16> {
  %attn = fusion.matmul %a, %wa {transpose_rhs} : tensor<33x128xbf16>, tensor<64x128xbf16> -> tensor<33x64xbf16>
  %mlp = fusion.matmul %m, %wm bias(%bm : tensor<64xbf16>) {transpose_rhs} : tensor<33x96xbf16>, tensor<64x96xbf16> -> tensor<33x64xbf16>
  %s = fusion.add %mlp, %attn : tensor<33x64xbf16>
  return %s : tensor<33x64xbf16>
}
}
