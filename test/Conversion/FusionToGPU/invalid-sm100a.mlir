// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics
// Test that every fused GEMM the sm_100a (tcgen05) generator cannot emit yet
// is refused with a diagnostic that names what is missing (one case per
// message). What it emits: the plain GEMM with row_scale, col_bias and
// residual, split-K, the rms_norm / layer_norm epilogues over a row one
// CTA holds, a cluster shares or global memory exchanges, the grad
// epilogues over a row one CTA holds or a cluster shares, and Lazy Pre-Norm
// (fusion-to-gpu-sm100a.mlir, norm-epilogue-sm100a.mlir,
// global-rows-sm100a.mlir, grad-epilogue-sm100a.mlir,
// lazy-prenorm-sm100a.mlir, ptxas-sweep-sm100a.mlir).

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

// A grad epilogue over a row wider than a cluster (global_rows): its row
// sums have no global-memory exchange (on either target).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @grad_global_rows(%a: tensor<256x512xbf16>, %b: tensor<512x12288xbf16>, %x: tensor<256x12288xbf16>, %r: tensor<256xf32>) -> tensor<256x12288xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: a grad epilogue whose row is wider than one cluster (global_rows) is not handled by this generator yet: rows up to 8192 columns}}
  %c = fusion.fused_matmul %a, %b norm_input(%x : tensor<256x12288xbf16>) rstd(%r : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144, global_rows = true>} : tensor<256x512xbf16>, tensor<512x12288xbf16> -> tensor<256x12288xbf16>
  return %c : tensor<256x12288xbf16>
}
}

// -----

// The sm_90a kernel's epilogue warps for a norm row over a cluster.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @epilogue_warps(%a: tensor<256x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<256x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: epilogue_warps is the sm_90a kernel's way to finish a norm row over several CTAs; the sm_100a kernel's epilogue warpgroup finishes it from the tensor memory (re-run fusion-plan-kernels for sm_100a)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 2, consumers = 1, smem_bytes = 230912, epilogue_warps = true>} : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>
  return %c : tensor<256x1024xbf16>
}
}

// -----

// A norm row's tile_n past 256 that is not made of 64-column boxes.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @norm_granularity(%a: tensor<256x512xbf16>, %b: tensor<512x288xbf16>) -> tensor<256x288xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: tile_n = 288 must be a multiple of 64 and at most 512 (B is staged in 64-column swizzled boxes; a norm row's accumulator is one stage of the tensor memory)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 288, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144>} : tensor<256x512xbf16>, tensor<512x288xbf16> -> tensor<256x288xbf16>
  return %c : tensor<256x288xbf16>
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
// element-wise kernel keeps two accumulator stages, tile_n up to 256.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @wide(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: tile_n = 512 must be a multiple of 64 and at most 256 (B is staged in 64-column swizzled halves)}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
}

// -----

// A small-M configuration: the sm_90a kernel's second body only.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @small_m(%a: tensor<?x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: a small-M or decode configuration (fusion.kernel_small_m, fusion.kernel_decode) is generated on sm_90a only; the tensor-memory kernel keeps one body}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 1, smem_bytes = 181760>} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %c : tensor<?x4096xbf16>
}
}

// -----

// The pair of CTAs sharing B's tiles (cluster_m) is the sm_90a kernel's.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @cluster_m(%a: tensor<65536x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<65536x4096xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_100a fused GEMM kernel: cluster_m = 2 (B's tile multicast over a pair of CTAs) is generated on a target accumulating in registers (sm_90a), without a row dot or the decode body, for tile_n a multiple of 128, but got the target sm_100a}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912, cluster_m = 2>} : tensor<65536x4096xbf16>, tensor<4096x4096xbf16> -> tensor<65536x4096xbf16>
  return %c : tensor<65536x4096xbf16>
}
}
