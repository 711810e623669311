// REQUIRES: ptxas
// The sm_90a GEMM kernel's activation epilogue and gated product (up), from
// programs written with the unfused ops (fusion-fuse folds them):
// - Llama's gated MLP after its RMSNorm: one GEMM whose tiles load 128
//   columns of each weight (B's boxes from two tensor maps: the pair of CTAs
//   along M shares them by multicast) and store act(gate) * up over 128
//   output columns; its small-M body takes a box of each, 64 columns;
// - the same with B row-major, and with f16;
// - GPT-2's gelu_tanh(x W1^T + b1), BERT's exact gelu, relu with an f32
//   output, each as the element-wise epilogue;
// - the decode body (decode-swap) with silu.
// Every kernel assembles without spilling.
// RUN: fusion-opt %s --fusion-fuse "--fusion-plan-kernels=small-m=true decode-swap=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-fuse "--fusion-plan-kernels=small-m=true decode-swap=true" --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-fuse "--fusion-to-gpu=format=isa small-m=true decode-swap=true" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir

// The gated GEMM's main tile holds 256 accumulator columns (128 of each
// weight), its small-M tile 128; neither gets a decode body.
// PLAN-LABEL: GEMM kernel on sm_90a
// PLAN: tile_n = 256{{.*}}cluster_m = 2
// PLAN: small-M GEMM kernel on sm_90a {{.*}}tile_n = 128
// PLAN: no decode GEMM body: the decode body's tiles are 64 features of one weight, the gated product's pair both weights' columns

// The host encodes up's descriptor beside B's (both in 64 x 64 boxes),
// then the kernel takes it after B's; its producer loads B's boxes from
// both, its consumers multiply act(gate) by up.
// CHECK-LABEL: func.func @llama_mlp(
// CHECK-COUNT-2: nvgpu.tma.create.descriptor {{.*}} -> <tensor = memref<64x64xbf16, 3>
// CHECK-LABEL: gpu.func @llama_mlp_kernel3
// CHECK-SAME: (%[[TMA_A:[a-z0-9]+]]: !llvm.ptr, %[[TMA_B:[a-z0-9]+]]: !llvm.ptr, %[[TMA_UP:[a-z0-9]+]]: !llvm.ptr,
// CHECK-DAG: %[[MAP_B:.*]] = builtin.unrealized_conversion_cast %[[TMA_B]]
// CHECK-DAG: %[[MAP_UP:.*]] = builtin.unrealized_conversion_cast %[[TMA_UP]]
// CHECK-DAG: nvgpu.tma.async.load %[[MAP_B]]
// CHECK-DAG: nvgpu.tma.async.load %[[MAP_UP]]
// CHECK: math.exp2
// CHECK: nvvm.rcp.approx.ftz.f
// CHECK: arith.mulf {{.*}} : vector<2xf32>

// The 16-bit outputs' silu and gelu_tanh by ex2.approx and rcp.approx (the
// MUFU tanh's error in their negative tails is many ulps), gelu's erf's
// reciprocal too: no IEEE division, no tanh.approx.
// PTX-NOT: tanh.approx
// PTX: ex2.approx
// PTX: rcp.approx.ftz.f32
// PTX-NOT: tanh.approx
// PTXAS-DAG: ptxas ok: llama_mlp_kernel{{[0-9]+}} registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: gated_row_major_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: gated_f16_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: gpt2_fc1_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: bert_gelu_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: relu_f32_out_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: decode_silu_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: spills=[1-9]

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @llama_mlp(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %wg: tensor<11008x4096xbf16>, %wu: tensor<11008x4096xbf16>) -> tensor<?x11008xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<4096xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %a = fusion.matmul %n, %wg {transpose_rhs} : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
  %u = fusion.matmul %n, %wu {transpose_rhs} : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
  %s = fusion.activation %a {activation = #fusion.activation<silu>} : tensor<?x11008xbf16>
  %h = fusion.mul %s, %u : tensor<?x11008xbf16>
  return %h : tensor<?x11008xbf16>
}
func.func @gated_row_major(%x: tensor<?x1024xbf16>, %wg: tensor<1024x2816xbf16>, %wu: tensor<1024x2816xbf16>) -> tensor<?x2816xbf16> {
  %a = fusion.matmul %x, %wg : tensor<?x1024xbf16>, tensor<1024x2816xbf16> -> tensor<?x2816xbf16>
  %u = fusion.matmul %x, %wu : tensor<?x1024xbf16>, tensor<1024x2816xbf16> -> tensor<?x2816xbf16>
  %s = fusion.activation %a {activation = #fusion.activation<gelu_tanh>} : tensor<?x2816xbf16>
  %h = fusion.mul %s, %u : tensor<?x2816xbf16>
  return %h : tensor<?x2816xbf16>
}
func.func @gated_f16(%x: tensor<8192x512xf16>, %wg: tensor<1344x512xf16>, %wu: tensor<1344x512xf16>) -> tensor<8192x1344xf16> {
  %a = fusion.matmul %x, %wg {transpose_rhs} : tensor<8192x512xf16>, tensor<1344x512xf16> -> tensor<8192x1344xf16>
  %u = fusion.matmul %x, %wu {transpose_rhs} : tensor<8192x512xf16>, tensor<1344x512xf16> -> tensor<8192x1344xf16>
  %s = fusion.activation %a {activation = #fusion.activation<silu>} : tensor<8192x1344xf16>
  %h = fusion.mul %u, %s : tensor<8192x1344xf16>
  return %h : tensor<8192x1344xf16>
}
func.func @gpt2_fc1(%x: tensor<?x768xbf16>, %w: tensor<3072x768xbf16>, %b: tensor<3072xbf16>) -> tensor<?x3072xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<3072xbf16>) {transpose_rhs} : tensor<?x768xbf16>, tensor<3072x768xbf16> -> tensor<?x3072xbf16>
  %a = fusion.activation %h {activation = #fusion.activation<gelu_tanh>} : tensor<?x3072xbf16>
  return %a : tensor<?x3072xbf16>
}
func.func @bert_gelu(%x: tensor<8192x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<4096xbf16>) {transpose_rhs} : tensor<8192x1024xbf16>, tensor<4096x1024xbf16> -> tensor<8192x4096xbf16>
  %a = fusion.activation %h {activation = #fusion.activation<gelu>} : tensor<8192x4096xbf16>
  return %a : tensor<8192x4096xbf16>
}
func.func @relu_f32_out(%x: tensor<8192x512xbf16>, %w: tensor<512x1024xbf16>) -> tensor<8192x1024xf32> {
  %h = fusion.matmul %x, %w : tensor<8192x512xbf16>, tensor<512x1024xbf16> -> tensor<8192x1024xf32>
  %a = fusion.activation %h {activation = #fusion.activation<relu>} : tensor<8192x1024xf32>
  return %a : tensor<8192x1024xf32>
}
func.func @decode_silu(%x: tensor<?x2048xbf16>, %w: tensor<5632x2048xbf16>) -> tensor<?x5632xbf16> {
  %h = fusion.matmul %x, %w {transpose_rhs} : tensor<?x2048xbf16>, tensor<5632x2048xbf16> -> tensor<?x5632xbf16>
  %a = fusion.activation %h {activation = #fusion.activation<silu>} : tensor<?x5632xbf16>
  return %a : tensor<?x5632xbf16>
}
}
