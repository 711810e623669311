// An MLP's activation folded into its first GEMM, and a gated MLP's two
// GEMMs and product folded into one (fusion-activation-epilogue, in
// fusion-fuse): each function runs on the CPU on the same random inputs
// before and after (the activation of the f32 accumulator, rounded once,
// where the unfused program rounds the GEMMs' outputs first: within a few
// bf16 ulps).
// RUN: fusion-runner %s -e llama_mlp --after-passes='fusion-fuse' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e llama_mlp_prenorm --after-passes='fusion-fuse' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e gemma_mlp_up_first --after-passes='fusion-fuse' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// RUN: fusion-runner %s -e llama_mlp_bf16 --after-passes='fusion-fuse' --atol=3e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e gpt2_fc1 --after-passes='fusion-fuse' --atol=3e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e relu_f32 --after-passes='fusion-fuse' --atol=1e-4 --rtol=1e-4 | FileCheck %s
// The rewrites happened: one GEMM per MLP half, no activation or product
// left.
// RUN: fusion-opt %s -fusion-fuse | FileCheck %s --check-prefix=IR
// And a wrong rewrite would be caught: the product with the gate and the up
// weight swapped differs, as does the activation left out.
// RUN: not fusion-runner %s -e llama_mlp --compare=llama_mlp_swapped --atol=1e-4 --rtol=1e-4 | FileCheck %s --check-prefix=FAIL
// RUN: not fusion-runner %s -e gpt2_fc1 --compare=gpt2_fc1_linear --atol=3e-2 --rtol=2e-2 | FileCheck %s --check-prefix=FAIL
// CHECK: PASS
// FAIL: FAIL
// IR-LABEL: func.func @llama_mlp(
// IR: fusion.fused_matmul %arg0, %arg1 up(%arg2 : tensor<96x64xf32>) {activation = #fusion.activation<silu>, transpose_rhs}
// IR-NOT: fusion.activation %
// IR-NOT: fusion.mul %
// IR-LABEL: func.func @llama_mlp_prenorm(
// IR: fusion.fused_matmul %arg0, %{{.*}} up(%{{.*}} : tensor<96x64xf32>) {activation = #fusion.activation<silu>, prologue = #fusion.prologue<rms_norm>
// IR-NOT: fusion.rms_norm
// IR-LABEL: func.func @gemma_mlp_up_first(
// IR: fusion.fused_matmul %arg0, %arg1 up(%arg2 : tensor<80x48xf32>) {activation = #fusion.activation<gelu_tanh>, transpose_rhs}
// IR-LABEL: func.func @llama_mlp_bf16(
// IR: fusion.fused_matmul %arg0, %arg1 up(%arg2 : tensor<96x64xbf16>) {activation = #fusion.activation<silu>, transpose_rhs}
// IR-LABEL: func.func @gpt2_fc1(
// IR: fusion.fused_matmul %arg0, %arg1 col_bias(%arg2 : tensor<128xbf16>) {activation = #fusion.activation<gelu_tanh>, transpose_rhs}
// IR-LABEL: func.func @relu_f32(
// IR: fusion.fused_matmul %arg0, %arg1 {activation = #fusion.activation<relu>}

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// Llama's MLP as written: down(silu(gate(x)) * up(x)), nn.Linear weights
// (f32: the rewrite keeps the values up to f32 rounding).
func.func @llama_mlp(%x: tensor<37x64xf32>, %wg: tensor<96x64xf32>, %wu: tensor<96x64xf32>, %wd: tensor<64x96xf32>) -> tensor<37x64xf32> {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<37x64xf32>, tensor<96x64xf32> -> tensor<37x96xf32>
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<37x64xf32>, tensor<96x64xf32> -> tensor<37x96xf32>
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<37x96xf32>
  %h = fusion.mul %a, %u : tensor<37x96xf32>
  %y = fusion.matmul %h, %wd {transpose_rhs} : tensor<37x96xf32>, tensor<64x96xf32> -> tensor<37x64xf32>
  return %y : tensor<37x64xf32>
}
func.func @llama_mlp_swapped(%x: tensor<37x64xf32>, %wg: tensor<96x64xf32>, %wu: tensor<96x64xf32>, %wd: tensor<64x96xf32>) -> tensor<37x64xf32> {
  %g = fusion.matmul %x, %wu {transpose_rhs} : tensor<37x64xf32>, tensor<96x64xf32> -> tensor<37x96xf32>
  %u = fusion.matmul %x, %wg {transpose_rhs} : tensor<37x64xf32>, tensor<96x64xf32> -> tensor<37x96xf32>
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<37x96xf32>
  %h = fusion.mul %a, %u : tensor<37x96xf32>
  %y = fusion.matmul %h, %wd {transpose_rhs} : tensor<37x96xf32>, tensor<64x96xf32> -> tensor<37x64xf32>
  return %y : tensor<37x64xf32>
}
// The decoder layer's second half: post_attention_layernorm (RMSNorm with
// its weight), then the MLP; Lazy Pre-Norm puts the norm in both GEMMs'
// prologue (its weight folded into each), then they become one.
func.func @llama_mlp_prenorm(%x: tensor<37x64xf32>, %gamma: tensor<64xf32>, %wg: tensor<96x64xf32>, %wu: tensor<96x64xf32>) -> tensor<37x96xf32> {
  %n = fusion.rms_norm %x weight(%gamma : tensor<64xf32>) {epsilon = 1.0e-05 : f32} : tensor<37x64xf32> -> tensor<37x64xf32>
  %g = fusion.matmul %n, %wg {transpose_rhs} : tensor<37x64xf32>, tensor<96x64xf32> -> tensor<37x96xf32>
  %u = fusion.matmul %n, %wu {transpose_rhs} : tensor<37x64xf32>, tensor<96x64xf32> -> tensor<37x96xf32>
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<37x96xf32>
  %h = fusion.mul %a, %u : tensor<37x96xf32>
  return %h : tensor<37x96xf32>
}
// Gemma's gelu_tanh, the up projection on the product's left.
func.func @gemma_mlp_up_first(%x: tensor<19x48xf32>, %wg: tensor<80x48xf32>, %wu: tensor<80x48xf32>) -> tensor<19x80xf32> {
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<19x48xf32>, tensor<80x48xf32> -> tensor<19x80xf32>
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<19x48xf32>, tensor<80x48xf32> -> tensor<19x80xf32>
  %a = fusion.activation %g {activation = #fusion.activation<gelu_tanh>} : tensor<19x80xf32>
  %h = fusion.mul %u, %a : tensor<19x80xf32>
  return %h : tensor<19x80xf32>
}
// The gated half in bf16 (the down projection after it would sum the
// product's one-ulp differences over I).
func.func @llama_mlp_bf16(%x: tensor<37x64xbf16>, %wg: tensor<96x64xbf16>, %wu: tensor<96x64xbf16>) -> tensor<37x96xbf16> {
  %g = fusion.matmul %x, %wg {transpose_rhs} : tensor<37x64xbf16>, tensor<96x64xbf16> -> tensor<37x96xbf16>
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<37x64xbf16>, tensor<96x64xbf16> -> tensor<37x96xbf16>
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<37x96xbf16>
  %h = fusion.mul %a, %u : tensor<37x96xbf16>
  return %h : tensor<37x96xbf16>
}
// GPT-2's first MLP layer: gelu_tanh(x W1^T + b1).
func.func @gpt2_fc1(%x: tensor<21x64xbf16>, %w: tensor<128x64xbf16>, %b: tensor<128xbf16>) -> tensor<21x128xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<128xbf16>) {transpose_rhs} : tensor<21x64xbf16>, tensor<128x64xbf16> -> tensor<21x128xbf16>
  %a = fusion.activation %h {activation = #fusion.activation<gelu_tanh>} : tensor<21x128xbf16>
  return %a : tensor<21x128xbf16>
}
func.func @gpt2_fc1_linear(%x: tensor<21x64xbf16>, %w: tensor<128x64xbf16>, %b: tensor<128xbf16>) -> tensor<21x128xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<128xbf16>) {transpose_rhs} : tensor<21x64xbf16>, tensor<128x64xbf16> -> tensor<21x128xbf16>
  return %h : tensor<21x128xbf16>
}
// f32 throughout, B row-major.
func.func @relu_f32(%x: tensor<5x24xf32>, %w: tensor<24x40xf32>) -> tensor<5x40xf32> {
  %h = fusion.matmul %x, %w : tensor<5x24xf32>, tensor<24x40xf32> -> tensor<5x40xf32>
  %a = fusion.activation %h {activation = #fusion.activation<relu>} : tensor<5x40xf32>
  return %a : tensor<5x40xf32>
}
}
