// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics
// Test that every fused GEMM the sm_100a (tcgen05) generator cannot emit yet
// is refused with a diagnostic that names what is missing (one case per
// message). What it emits: the plain GEMM with row_scale, col_bias and
// residual, split-K (fusion-to-gpu-sm100a.mlir, ptxas-sweep-sm100a.mlir).

// An accumulator stage wider than the 512 tensor-memory columns (the
// planner never plans one: planGemmTensorMemory, which it shares).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @tmem_budget(%a: tensor<256x512xbf16>, %b: tensor<512x576xbf16>) -> tensor<256x576xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: expected the f32 accumulator of a 128x576 tile to fit the 512 tensor-memory columns of sm_100a (one accumulator stage of 1 x tile_n columns, two where they fit), but one stage needs 576}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 576, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 214528>} : tensor<256x512xbf16>, tensor<512x576xbf16> -> tensor<256x576xbf16>
  return %c : tensor<256x576xbf16>
}
}

// -----

// Lazy Pre-Norm.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @lazy(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: Lazy Pre-Norm (prologue rms_norm) is not emitted for sm_100a yet (its row sums of squares need a reader of the A tiles beside the tcgen05 MMA thread)}}
  %c = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// The norm epilogues (forward and grad; their clusters and global rows with
// them).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @rms_norm(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: the rms_norm epilogue is not emitted for sm_100a yet (its kernel has the element-wise epilogue pieces only: row_scale, col_bias, residual)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// The sm_90a kernel's configuration (two consumer warpgroups of 64 rows).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @consumers(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: tile_m = 128 with consumers = 2 is not what the sm_100a kernel computes: 128-row tiles (tcgen05.mma with M = 128) read back by one epilogue warpgroup (consumers = 1)}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A tile_n the planner gives only a norm row (one 512-column stage): the
// element-wise kernel stages B in 64-column boxes, up to 256.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @wide(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: tile_n = 512 must be a multiple of 64 and at most 256 (B is staged in 64-column swizzled halves)}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
}
