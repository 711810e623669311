// REQUIRES: ptxas
// Test that every layout a norm epilogue with save_norm_input takes on
// sm_100a (a training step's forward: the norm's input stored beside the
// output) stores the extra chunks and assembles with ptxas without spills:
// the epilogue warpgroup's first pass stores each 64-column chunk of
// acc + residual (+ col_bias) as the saved input (through the staging
// buffers and the saved input's tensor map; f32 from registers), the last
// pass the output's, the tile's stores rotating over the buffers in that
// order. One CTA (N = 256), clusters of 2 (N = 768, 1024), 4 and 8 (2048,
// 4096, f32 too) and a residual. Structurally checked only (no Blackwell GPU
// has run it).
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s --check-prefix=IR
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s
// CHECK-DAG: ptxas ok: rms_256_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_256_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_256_res_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_256_f32_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_768_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_768_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_1024_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_1024_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_1024_res_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_2048_f32_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_2048_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_2048_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rms_4096_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: ln_4096_res_kernel0 registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED
// Four tensor maps (A, B, the output, the saved input), and two TMA stores
// (saved, then output) in the one-CTA kernel.
// IR-LABEL: func.func @rms_256(
// IR-COUNT-4: nvgpu.tma.create.descriptor
// IR-NOT: nvgpu.tma.create.descriptor
// IR: gpu.launch_func {{.*}}@rms_256_kernel0
// IR-LABEL: gpu.func @rms_256_kernel0
// IR-COUNT-2: nvgpu.tma.async.store
// IR-NOT: nvgpu.tma.async.store
// IR-LABEL: gpu.func @ln_256_res_kernel0
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @rms_256(%a: tensor<1000x512xbf16>, %b: tensor<256x512xbf16>, %w: tensor<256xbf16>) -> (tensor<1000x256xbf16>, tensor<1000x256xbf16>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<256x512xbf16> -> tensor<1000x256xbf16> saved_norm_input(tensor<1000x256xbf16>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x256xbf16>, tensor<1000x256xbf16>, tensor<1000xf32>
}
func.func @ln_256_res(%a: tensor<1000x512xbf16>, %b: tensor<256x512xbf16>, %r: tensor<1000x256xbf16>, %w: tensor<256xbf16>, %nb: tensor<256xbf16>) -> (tensor<1000x256xbf16>, tensor<1000x256xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b residual(%r : tensor<1000x256xbf16>) norm_weight(%w : tensor<256xbf16>) norm_bias(%nb : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<256x512xbf16> -> tensor<1000x256xbf16> saved_norm_input(tensor<1000x256xbf16>), tensor<1000xf32>, tensor<1000xf32>
  return %y, %h, %s0, %s1 : tensor<1000x256xbf16>, tensor<1000x256xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @ln_256(%a: tensor<1000x512xbf16>, %b: tensor<256x512xbf16>, %w: tensor<256xbf16>, %nb: tensor<256xbf16>) -> (tensor<1000x256xbf16>, tensor<1000x256xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<256xbf16>) norm_bias(%nb : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<256x512xbf16> -> tensor<1000x256xbf16> saved_norm_input(tensor<1000x256xbf16>), tensor<1000xf32>, tensor<1000xf32>
  return %y, %h, %s0, %s1 : tensor<1000x256xbf16>, tensor<1000x256xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @rms_256_f32(%a: tensor<1000x512xbf16>, %b: tensor<256x512xbf16>, %w: tensor<256xbf16>) -> (tensor<1000x256xf32>, tensor<1000x256xf32>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<256xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<256x512xbf16> -> tensor<1000x256xf32> saved_norm_input(tensor<1000x256xf32>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x256xf32>, tensor<1000x256xf32>, tensor<1000xf32>
}
func.func @rms_768(%a: tensor<1000x512xbf16>, %b: tensor<768x512xbf16>, %w: tensor<768xbf16>) -> (tensor<1000x768xbf16>, tensor<1000x768xbf16>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<768xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<768x512xbf16> -> tensor<1000x768xbf16> saved_norm_input(tensor<1000x768xbf16>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x768xbf16>, tensor<1000x768xbf16>, tensor<1000xf32>
}
func.func @ln_768(%a: tensor<1000x512xbf16>, %b: tensor<768x512xbf16>, %w: tensor<768xbf16>, %nb: tensor<768xbf16>) -> (tensor<1000x768xbf16>, tensor<1000x768xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<768xbf16>) norm_bias(%nb : tensor<768xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<768x512xbf16> -> tensor<1000x768xbf16> saved_norm_input(tensor<1000x768xbf16>), tensor<1000xf32>, tensor<1000xf32>
  return %y, %h, %s0, %s1 : tensor<1000x768xbf16>, tensor<1000x768xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @rms_1024(%a: tensor<1000x512xbf16>, %b: tensor<1024x512xbf16>, %w: tensor<1024xbf16>) -> (tensor<1000x1024xbf16>, tensor<1000x1024xbf16>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<1024xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<1024x512xbf16> -> tensor<1000x1024xbf16> saved_norm_input(tensor<1000x1024xbf16>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x1024xbf16>, tensor<1000x1024xbf16>, tensor<1000xf32>
}
func.func @ln_1024(%a: tensor<1000x512xbf16>, %b: tensor<1024x512xbf16>, %w: tensor<1024xbf16>, %nb: tensor<1024xbf16>) -> (tensor<1000x1024xbf16>, tensor<1000x1024xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<1024xbf16>) norm_bias(%nb : tensor<1024xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<1024x512xbf16> -> tensor<1000x1024xbf16> saved_norm_input(tensor<1000x1024xbf16>), tensor<1000xf32>, tensor<1000xf32>
  return %y, %h, %s0, %s1 : tensor<1000x1024xbf16>, tensor<1000x1024xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @rms_1024_res(%a: tensor<1000x512xbf16>, %b: tensor<1024x512xbf16>, %r: tensor<1000x1024xbf16>, %w: tensor<1024xbf16>) -> (tensor<1000x1024xbf16>, tensor<1000x1024xbf16>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b residual(%r : tensor<1000x1024xbf16>) norm_weight(%w : tensor<1024xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<1024x512xbf16> -> tensor<1000x1024xbf16> saved_norm_input(tensor<1000x1024xbf16>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x1024xbf16>, tensor<1000x1024xbf16>, tensor<1000xf32>
}
func.func @rms_2048_f32(%a: tensor<1000x512xbf16>, %b: tensor<2048x512xbf16>, %w: tensor<2048xbf16>) -> (tensor<1000x2048xf32>, tensor<1000x2048xf32>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<2048xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<2048x512xbf16> -> tensor<1000x2048xf32> saved_norm_input(tensor<1000x2048xf32>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x2048xf32>, tensor<1000x2048xf32>, tensor<1000xf32>
}
func.func @rms_2048(%a: tensor<1000x512xbf16>, %b: tensor<2048x512xbf16>, %w: tensor<2048xbf16>) -> (tensor<1000x2048xbf16>, tensor<1000x2048xbf16>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<2048xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<2048x512xbf16> -> tensor<1000x2048xbf16> saved_norm_input(tensor<1000x2048xbf16>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x2048xbf16>, tensor<1000x2048xbf16>, tensor<1000xf32>
}
func.func @ln_2048(%a: tensor<1000x512xbf16>, %b: tensor<2048x512xbf16>, %w: tensor<2048xbf16>, %nb: tensor<2048xbf16>) -> (tensor<1000x2048xbf16>, tensor<1000x2048xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<2048xbf16>) norm_bias(%nb : tensor<2048xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<2048x512xbf16> -> tensor<1000x2048xbf16> saved_norm_input(tensor<1000x2048xbf16>), tensor<1000xf32>, tensor<1000xf32>
  return %y, %h, %s0, %s1 : tensor<1000x2048xbf16>, tensor<1000x2048xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @rms_4096(%a: tensor<1000x512xbf16>, %b: tensor<4096x512xbf16>, %w: tensor<4096xbf16>) -> (tensor<1000x4096xbf16>, tensor<1000x4096xbf16>, tensor<1000xf32>) {
  %y, %h, %s0 = fusion.fused_matmul %a, %b norm_weight(%w : tensor<4096xbf16>)
      {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<4096x512xbf16> -> tensor<1000x4096xbf16> saved_norm_input(tensor<1000x4096xbf16>), tensor<1000xf32>
  return %y, %h, %s0 : tensor<1000x4096xbf16>, tensor<1000x4096xbf16>, tensor<1000xf32>
}
func.func @ln_4096_res(%a: tensor<1000x512xbf16>, %b: tensor<4096x512xbf16>, %r: tensor<1000x4096xbf16>, %w: tensor<4096xbf16>, %nb: tensor<4096xbf16>) -> (tensor<1000x4096xbf16>, tensor<1000x4096xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %h, %s0, %s1 = fusion.fused_matmul %a, %b residual(%r : tensor<1000x4096xbf16>) norm_weight(%w : tensor<4096xbf16>) norm_bias(%nb : tensor<4096xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_norm_input, save_stats, transpose_rhs}
      : tensor<1000x512xbf16>, tensor<4096x512xbf16> -> tensor<1000x4096xbf16> saved_norm_input(tensor<1000x4096xbf16>), tensor<1000xf32>, tensor<1000xf32>
  return %y, %h, %s0, %s1 : tensor<1000x4096xbf16>, tensor<1000x4096xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
}
