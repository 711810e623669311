// REQUIRES: ptxas
// Test that f16 operands take the f16 wgmma and assemble with ptxas for
// sm_90a: a plain GEMM, and the Lazy Pre-Norm prologue (f16 converts with
// arith.extf, not the bf16 shift) with a LayerNorm cluster epilogue.
// (Only assembled here: the H200 suite runs bf16 cases so far.)
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// CHECK-DAG: ptxas ok: f16_gemm_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: f16_lazy_ln_kernel0 registers=168 spills={{[0-9]+}}
// CHECK-NOT: FAILED
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
// PTX-NOT: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f16_gemm(%a: tensor<1000x512xf16>, %b: tensor<512x256xf16>) -> tensor<1000x256xf16> {
  %y = fusion.fused_matmul %a, %b : tensor<1000x512xf16>, tensor<512x256xf16> -> tensor<1000x256xf16>
  return %y : tensor<1000x256xf16>
}
func.func @f16_lazy_ln(%a: tensor<1000x512xf16>, %b: tensor<512x1024xf16>, %w: tensor<1024xf16>) -> tensor<1000x1024xf16> {
  %y = fusion.fused_matmul %a, %b norm_weight(%w : tensor<1024xf16>) {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32, epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xf16>, tensor<512x1024xf16> -> tensor<1000x1024xf16>
  return %y : tensor<1000x1024xf16>
}
}
