// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics
// Test that every kernel the generator cannot emit is refused with a
// diagnostic that names what is missing (one case per message).

// An op that was not planned.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @unplanned(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the op has no fusion.kernel configuration (run fusion-plan-kernels)}}
  %c = fusion.fused_matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// f32 operands (wgmma reads bf16/f16 here).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f32_operands(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the A and B operands must be bf16 or f16}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xf32>, tensor<512x256xf32> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A K step other than one swizzle span.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @tile_k(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: tile_k must be 64 (one 128-byte swizzle span)}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 32, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// tile_m not 64 rows per consumer warpgroup.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @tile_m(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: tile_m must be 64 rows per consumer warpgroup}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// tile_n not a multiple of the 64-column B halves.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @tile_n(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: tile_n = 200 must be a multiple of 64 and at most 256 (B is staged in 64-column swizzled halves)}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 200, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// The LayerNorm prologue without B's column sums (fusion-plan-kernels adds
// them; this op was planned by hand).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln_prologue(%a: tensor<256x512xbf16>, %b: tensor<512x192xbf16>) -> tensor<256x192xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the LayerNorm prologue needs B's column sums as its col_sum operand (f32 [N]), but the op has none (fusion-plan-kernels adds them)}}
  %c = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 231424>} : tensor<256x512xbf16>, tensor<512x192xbf16> -> tensor<256x192xbf16>
  return %c : tensor<256x192xbf16>
}
}

// -----

// The LayerNorm prologue over 256-column tiles (here fixed by an RMSNorm
// epilogue over N = 256): the sm_90a epilogue would spill.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln_prologue_wide(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %cs: tensor<256xf32>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: tile_n = 256 with the LayerNorm prologue is not handled by the sm_90a kernel: at most 192 columns (wider, its epilogue's registers spill; re-run fusion-plan-kernels, which takes it unless a norm epilogue fixes tile_n)}}
  %c = fusion.fused_matmul %a, %b col_sum(%cs : tensor<256xf32>) {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32, epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 231424>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A grad epilogue over a row wider than one cluster (global rows).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad_global_rows(%a: tensor<256x512xbf16>, %b: tensor<512x2048xbf16>, %x: tensor<256x2048xbf16>, %r: tensor<256xf32>) -> tensor<256x2048xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue whose row is wider than one cluster (global_rows) is not handled by this generator yet: rows up to 1024 columns}}
  %c = fusion.fused_matmul %a, %b norm_input(%x : tensor<256x2048xbf16>) rstd(%r : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 215552, global_rows = true>} : tensor<256x512xbf16>, tensor<512x2048xbf16> -> tensor<256x2048xbf16>
  return %c : tensor<256x2048xbf16>
}
}

// -----

// Epilogue warps for a forward norm's row that one CTA holds (only a grad
// epilogue's rows of one CTA run there).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @warps_one_cta(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: epilogue_warps with cluster_n = 1 and global_rows = false is for the grad epilogues (a forward norm's row that one CTA holds is finished by the consumers; re-run fusion-plan-kernels)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912, epilogue_warps = true>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A grad epilogue in the epilogue warps with an f32 dx (they stage dh as
// 16-bit values and store dx by TMA from there).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad_epilogue_warps_f32(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %x: tensor<256x256xbf16>, %r: tensor<256xf32>) -> tensor<256x256xf32> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue in the epilogue warps stages dh as 16-bit values and stores dx from there, but the output is f32 (re-run fusion-plan-kernels: it keeps such a gradient in the consumers)}}
  %c = fusion.fused_matmul %a, %b norm_input(%x : tensor<256x256xbf16>) rstd(%r : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 2, cluster_n = 1, consumers = 2, smem_bytes = 200192, epilogue_warps = true>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  return %c : tensor<256x256xf32>
}
}

// -----

// A grad epilogue with staged_residual (its residual is added to dx).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad_staged_residual(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %x: tensor<256x256xbf16>, %r: tensor<256xf32>, %res: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: staged_residual is for the forward norms (the residual is added to the accumulator); a grad epilogue adds its residual to dx, read by the epilogue warps from global memory}}
  %c = fusion.fused_matmul %a, %b residual(%res : tensor<256x256xbf16>) norm_input(%x : tensor<256x256xbf16>) rstd(%r : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 2, cluster_n = 1, consumers = 2, smem_bytes = 200192, epilogue_warps = true, staged_residual = true>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A grad epilogue with a dynamic N.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @grad_dynamic_n(%a: tensor<256x512xbf16>, %b: tensor<512x?xbf16>, %x: tensor<256x?xbf16>, %r: tensor<256xf32>) -> tensor<256x?xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue needs a static N (its parameter gradients' reduction is shaped by it), but N is dynamic}}
  %c = fusion.fused_matmul %a, %b norm_input(%x : tensor<256x?xbf16>) rstd(%r : tensor<256xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x?xbf16> -> tensor<256x?xbf16>
  return %c : tensor<256x?xbf16>
}
}

// -----

// A cluster for an epilogue without a row reduction.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster_without_norm(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: cluster_n = 2 is for the RMSNorm/LayerNorm epilogues, but the epilogue is none}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 2, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
}

// -----

// A cluster larger than sm_90a launches.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster_too_large(%a: tensor<256x512xbf16>, %b: tensor<512x8192xbf16>) -> tensor<256x8192xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: cluster_n = 32 must be in [1, 16] (the largest cluster sm_90a launches)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 32, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x8192xbf16> -> tensor<256x8192xbf16>
  return %c : tensor<256x8192xbf16>
}
}

// -----

// A configuration whose planned shared memory is too small for the kernel.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @smem(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the kernel needs 230912 bytes of shared memory, more than the planned 1000}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 1000>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// An op no kernel family takes, next to the fused ones.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mixed(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  // expected-error @below {{'tensor.empty' op cannot be lowered to the GPU: a function lowered by convert-fusion-to-gpu may hold fusion.fused_matmul, fusion.rms_norm, fusion.layer_norm, their grads, fusion.add, fusion.mul, fusion.activation, fusion.gdpa, fusion.gdpa_grad and fusion.norm_attention ops, tensor reshapes, splat float constants and index arithmetic (run fusion-fuse and fusion-plan-kernels first)}}
  %e = tensor.empty() : tensor<256x256xbf16>
  %d = fusion.add %c, %e : tensor<256x256xbf16>
  return %d : tensor<256x256xbf16>
}
}

// -----

// A tensor constant that is not a splat has no device buffer (a splat of
// 16- or 32-bit floats is filled by a memset).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dense_constant(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @below {{'arith.constant' op cannot be lowered to the GPU}}
  %c = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %y = fusion.add %x, %c : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}

// -----

// Row kernels: the innermost size sets the vector width and the launch shape.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @norm_dynamic_row(%x: tensor<64x?xbf16>) -> tensor<64x?xbf16> {
  // expected-error @below {{'fusion.rms_norm' op cannot generate an sm_90a row kernel: expected a static innermost dimension of the input (the kernel's vector width and launch shape depend on it), but got ?}}
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x?xbf16> -> tensor<64x?xbf16>
  return %y : tensor<64x?xbf16>
}
}

// -----

// Row kernels: fusion.activation's innermost size too (its vector width).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @activation_dynamic_row(%x: tensor<64x?xbf16>) -> tensor<64x?xbf16> {
  // expected-error @below {{'fusion.activation' op cannot generate an sm_90a row kernel: expected a static innermost dimension of the input (the kernel's vector width and launch shape depend on it), but got ?}}
  %y = fusion.activation %x {activation = #fusion.activation<silu>} : tensor<64x?xbf16>
  return %y : tensor<64x?xbf16>
}
}

// -----

// Row kernels: an activation of one value (rank 0) has no rows.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @activation_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'fusion.activation' op cannot generate an sm_90a row kernel: expected the input of rank >= 1}}
  %y = fusion.activation %x {activation = #fusion.activation<gelu>} : tensor<f32>
  return %y : tensor<f32>
}
}

// -----

// Row kernels: an empty innermost dimension.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @activation_empty_row(%x: tensor<?x0xf16>) -> tensor<?x0xf16> {
  // expected-error @below {{'fusion.activation' op cannot generate an sm_90a row kernel: expected a non-empty innermost dimension of the input, but got 0}}
  %y = fusion.activation %x {activation = #fusion.activation<relu>} : tensor<?x0xf16>
  return %y : tensor<?x0xf16>
}
}

// -----

// Row kernels: a norm row must fit 1024 threads x 16 vectors.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @norm_too_wide(%x: tensor<2x262144xbf16>) -> (tensor<2x262144xbf16>, tensor<2xf32>, tensor<2xf32>) {
  // expected-error @below {{'fusion.layer_norm' op cannot generate an sm_90a row kernel: a row of 262144 elements does not fit the row kernel (1024 threads x 16 vectors of 8 elements, 131072 at most)}}
  %y, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<2x262144xbf16> -> tensor<2x262144xbf16>, tensor<2xf32>, tensor<2xf32>
  return %y, %m, %r : tensor<2x262144xbf16>, tensor<2xf32>, tensor<2xf32>
}
}

// -----

// Row kernels: a broadcast over some leading dimensions only.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @add_middle_broadcast(%x: tensor<4x8x16xbf16>, %y: tensor<8x16xbf16>) -> tensor<4x8x16xbf16> {
  // expected-error @below {{'fusion.add' op cannot generate an sm_90a row kernel: rhs of type tensor<8x16xbf16> broadcasts over some leading dimensions of lhs and not others; the element-wise kernel takes rhs as lhs's shape, a row vector [N], a column [..., 1] over all of lhs's leading dimensions, or one value (static shapes where they differ)}}
  %z = fusion.add %x, %y : tensor<4x8x16xbf16>, tensor<8x16xbf16>
  return %z : tensor<4x8x16xbf16>
}
}

// -----

// Row kernels: rope's tables in another element type than its input.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rope_f32_tables(%x: tensor<?x256xbf16>, %c: tensor<?x64xf32>) -> tensor<?x256xbf16> {
  // expected-error @below {{'fusion.rope' op cannot generate an sm_90a row kernel: expected cos and sin of the input's element type (the kernel reads them in the input's vectors), but got f32}}
  %y = fusion.rope %x, %c, %c {head_dim = 64 : i64} : tensor<?x256xbf16>, tensor<?x64xf32> -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}

// -----

// Row kernels: rope's tables shared over a middle dimension (one per batch
// and head position is not a table row per input row modulo the tables').
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rope_middle_broadcast(%x: tensor<2x5x256xbf16>, %c: tensor<2x1x64xbf16>) -> tensor<2x5x256xbf16> {
  // expected-error @below {{'fusion.rope' op cannot generate an sm_90a row kernel: expected cos's leading dimensions to be the input's, after leading 1s (one table row per position, shared by the batches), but got tensor<2x1x64xbf16>}}
  %y = fusion.rope %x, %c, %c {head_dim = 64 : i64} : tensor<2x5x256xbf16>, tensor<2x1x64xbf16> -> tensor<2x5x256xbf16>
  return %y : tensor<2x5x256xbf16>
}
}

// -----

// One value returned twice: each result needs its own output buffer.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @twice(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x256xbf16>) {
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  // expected-error @below {{'func.return' op returns value #1 twice or returns an argument; a GPU function writes each result into its own output buffer}}
  return %c, %c : tensor<256x256xbf16>, tensor<256x256xbf16>
}
}

// -----

// No target on the module.
// expected-error @below {{convert-fusion-to-gpu needs the module's fusion.target (e.g. #fusion.target<"sm_90a">)}}
module {
func.func @no_target(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A norm row spread over CTAs without a cluster (statistics through global
// memory) with an f32 output: the tile would not fit shared memory.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @split_f32(%a: tensor<256x512xbf16>, %b: tensor<512x2048xbf16>) -> tensor<256x2048xf32> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a norm row spread over CTAs without a cluster needs a 16-bit output (the tile waits in shared memory), but the output is f32}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 215552, global_rows = true>} : tensor<256x512xbf16>, tensor<512x2048xbf16> -> tensor<256x2048xf32>
  return %c : tensor<256x2048xf32>
}
}

// -----

// A configuration whose CTAs do not cover the norm's row (hand-written, or
// planned for another N): refused, not normalized over a slice.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_not_covered(%a: tensor<256x512xbf16>, %b: tensor<512x2048xbf16>) -> tensor<256x2048xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a norm row of N = 2048 columns must be covered by the CTAs that share it, but tile_n x cluster_n = 256 and the configuration has global_rows = false (re-run fusion-plan-kernels)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x2048xbf16> -> tensor<256x2048xbf16>
  return %c : tensor<256x2048xbf16>
}
}

// -----

// Global rows for an epilogue without a row reduction.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @global_rows_no_norm(%a: tensor<256x512xbf16>, %b: tensor<512x2048xbf16>) -> tensor<256x2048xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: global_rows and epilogue_warps are for the RMSNorm/LayerNorm epilogues and their gradients, but the epilogue is none}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912, epilogue_warps = true, global_rows = true>} : tensor<256x512xbf16>, tensor<512x2048xbf16> -> tensor<256x2048xbf16>
  return %c : tensor<256x2048xbf16>
}
}

// -----

// A staged residual whose element type is not the output's.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @staged_f32_residual(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>, %r: tensor<256x512xf32>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: staged_residual needs a residual of the output's element type}}
  %c = fusion.fused_matmul %a, %b residual(%r : tensor<256x512xf32>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 230912, epilogue_warps = true, staged_residual = true>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
}

// -----

// A 16-bit norm row over a cluster without the epilogue warps that finish it.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster_without_warps(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a 16-bit norm row over several CTAs is finished by the epilogue warps here, but the configuration has epilogue_warps = false}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
}

// -----

// Stream-K for a norm epilogue (its rows whole on their CTAs): the
// configuration verifies (cluster_n = 1), the generator refuses it.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @stream_k_norm(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: stream_k is generated for a GEMM without a row reduction or a prologue (a tile's K is cut between two CTAs) on a target accumulating in registers (sm_90a), but the op has a row reduction}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912, stream_k = true>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A grad epilogue with a row dot is the consumers' of one CTA: not in the
// epilogue warps ...
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_epilogue_warps(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %g: tensor<256xbf16>, %x: tensor<256x256xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue with row_dot is generated in the consumers of one CTA (its row sum needs no exchange), but the configuration has epilogue_warps (re-run fusion-plan-kernels)}}
  %c, %dg = fusion.fused_matmul %a, %b norm_weight(%g : tensor<256xbf16>) norm_input(%x : tensor<256x256xbf16>) rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912, epilogue_warps = true>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>, tensor<256xf32>
  return %c : tensor<256x256xbf16>
}
}

// -----

// ... nor over a cluster ...
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_cluster(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>, %g: tensor<512xbf16>, %x: tensor<256x512xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue with row_dot is generated in the consumers of one CTA (its row sum needs no exchange), but the configuration has cluster_n = 2 (re-run fusion-plan-kernels)}}
  %c, %dg = fusion.fused_matmul %a, %b norm_weight(%g : tensor<512xbf16>) norm_input(%x : tensor<256x512xbf16>) rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 2, cluster_n = 2, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>, tensor<512xf32>
  return %c : tensor<256x512xbf16>
}
}

// -----

// ... nor with rows through global memory ...
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_global_rows(%a: tensor<256x512xbf16>, %b: tensor<512x512xbf16>, %g: tensor<512xbf16>, %x: tensor<256x512xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue with row_dot is generated in the consumers of one CTA (its row sum needs no exchange), but the configuration has global_rows (re-run fusion-plan-kernels)}}
  %c, %dg = fusion.fused_matmul %a, %b norm_weight(%g : tensor<512xbf16>) norm_input(%x : tensor<256x512xbf16>) rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 2, cluster_n = 1, consumers = 2, smem_bytes = 230912, global_rows = true>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>, tensor<512xf32>
  return %c : tensor<256x512xbf16>
}
}

// -----

// The row dot's tiles ride beside A's: A's element type.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_type(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %g: tensor<256xbf16>, %x: tensor<256x256xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: row_dot's tiles ride in the ring beside A's and need A's element type}}
  %c, %dg = fusion.fused_matmul %a, %b norm_weight(%g : tensor<256xbf16>) norm_input(%x : tensor<256x256xbf16>) rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xf16>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>, tensor<256xf32>
  return %c : tensor<256x256xbf16>
}
}

// -----

// A row-dot grad epilogue stages norm_input's tile through the ring as
// 16-bit values.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_f32_norm_input(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %g: tensor<256xbf16>, %x: tensor<256x256xf32>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a grad epilogue with row_dot stages norm_input's tiles through the ring as 16-bit values, but norm_input is f32}}
  %c, %dg = fusion.fused_matmul %a, %b norm_weight(%g : tensor<256xbf16>) norm_input(%x : tensor<256x256xf32>) rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>, tensor<256xf32>
  return %c : tensor<256x256xbf16>
}
}

// -----

// The row dot's vectors come by TMA beside A's tiles: A's element type.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_vector_type(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %g: tensor<256xbf16>, %x: tensor<256x256xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>, %c: tensor<512xf32>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: row_dot_shift and row_dot_sum come with each K step by TMA beside A's tile and need A's element type}}
  %c2, %dg = fusion.fused_matmul %a, %b norm_weight(%g : tensor<256xbf16>) norm_input(%x : tensor<256x256xbf16>) rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) row_dot_shift(%c : tensor<512xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 232192>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>, tensor<256xf32>
  return %c2 : tensor<256x256xbf16>
}
}

// -----

// A norm over column groups needs tiles of whole groups in one CTA's
// epilogue: heads of 128 in tiles of 192 are not (a hand-edited config).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @norm_groups_tile(%a: tensor<256x512xbf16>, %b: tensor<512x768xbf16>) -> tensor<256x768xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: a norm over groups of 128 columns needs tiles of whole groups (tile_n = 192) of a multiple of 8 columns in one CTA's epilogue, without a cluster, global rows or epilogue warps (re-run fusion-plan-kernels)}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 128 : i64, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x768xbf16> -> tensor<256x768xbf16>
  return %c : tensor<256x768xbf16>
}
}

// -----

// The small-M configuration is checked like the main one.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @small_m_tile_k(%a: tensor<?x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: its small-M configuration: tile_k must be 64 (one 128-byte swizzle span)}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 32, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 181760>} : tensor<?x512xbf16>, tensor<512x1024xbf16> -> tensor<?x1024xbf16>
  return %c : tensor<?x1024xbf16>
}
}

// -----

// A kernel with a small-M body launches plain tiles in both bodies.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @small_m_split_k(%a: tensor<?x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: expected the small-M configuration of a kernel with a small-M body without a cluster, split-K, stream-K or rows through global memory, but got cluster_n = 1, split_k = 2, stream_k = false, global_rows = false}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 181760, split_k = 2>} : tensor<?x512xbf16>, tensor<512x1024xbf16> -> tensor<?x1024xbf16>
  return %c : tensor<?x1024xbf16>
}
}

// -----

// decode_splits belongs to the small-M body (its arguments follow the
// body flag): not on the main configuration.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @decode_splits_main(%a: tensor<?x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: expected decode_splits on the small-M configuration (fusion.kernel_small_m) only, but the main one has decode_splits = 4}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912, decode_splits = 4>} : tensor<?x512xbf16>, tensor<512x1024xbf16> -> tensor<?x1024xbf16>
  return %c : tensor<?x1024xbf16>
}
}

// -----

// A K range does not see the whole row: no decode splits with Lazy
// Pre-Norm's row sums in the kernel.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @decode_splits_lazy(%a: tensor<?x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: its small-M configuration: decode_splits is generated for one CTA's tiles whose K loop carries only the accumulator (no prologue, row dot or grad epilogue) on a target accumulating in registers (sm_90a)}}
  %c = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912, decode_splits = 4>} : tensor<?x512xbf16>, tensor<512x1024xbf16> -> tensor<?x1024xbf16>
  return %c : tensor<?x1024xbf16>
}
}

// -----

// B's tile is shared by 64-column boxes, every other box from each CTA of
// the pair: tile_n holds an even number of boxes.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster_m_narrow_tile(%a: tensor<65536x512xbf16>, %b: tensor<512x64xbf16>) -> tensor<65536x64xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: cluster_m = 2 (B's tile multicast over a pair of CTAs) is generated on a target accumulating in registers (sm_90a), without a row dot or the decode body, for tile_n a multiple of 128, but got tile_n = 64}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 64, tile_k = 64, stages = 8, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>} : tensor<65536x512xbf16>, tensor<512x64xbf16> -> tensor<65536x64xbf16>
  return %c : tensor<65536x64xbf16>
}
}

// -----

// A decode body for a norm with a post_residual (the planner gives none:
// its per-head norm adds no post_residual).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @post_residual_decode(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>, %r: tensor<?x2048xbf16>) -> tensor<?x2048xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: its decode configuration: post_residual is added by the norm epilogues of the main and small-M bodies, not by the decode body (fusion-plan-kernels plans no decode body for it)}}
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<128xbf16>) post_residual(%r : tensor<?x2048xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>, fusion.kernel_decode = #fusion.kernel_config<tile_m = 32, tile_n = 128, tile_k = 64, stages = 11, cluster_n = 1, consumers = 2, smem_bytes = 227328>, fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128, tile_n = 128, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2, smem_bytes = 230912>, norm_group_size = 128 : i64, transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
}

// -----

// The gated product's tile holds whole boxes of both weights: tile_n 192
// would give 96 columns of each.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @gated_tile_n(%a: tensor<256x512xbf16>, %g: tensor<512x512xbf16>, %u: tensor<512x512xbf16>) -> tensor<256x512xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the gated product (up) takes tiles of its own whose tile_n holds both weights' 64-column boxes (a multiple of 128), without clusters along N, split-K, stream-K, decode splits or the decode body (re-run fusion-plan-kernels)}}
  %c = fusion.fused_matmul %a, %g up(%u : tensor<512x512xbf16>) {activation = #fusion.activation<silu>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
}

// -----

// An activation after split-K's partial sums would apply to each range's.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @activation_split_k(%a: tensor<4096x256xbf16>, %b: tensor<4096x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the activation applies to a tile's whole sum, which split-K, stream-K and decode splits hand over between CTAs (re-run fusion-plan-kernels, which plans none of them for it)}}
  %c = fusion.fused_matmul %a, %b {activation = #fusion.activation<gelu>, transpose_lhs, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, split_k = 4>} : tensor<4096x256xbf16>, tensor<4096x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}

// -----

// The rope epilogue: a tile of 192 columns cuts heads of 128.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rope_cut_heads(%x: tensor<?x64xbf16>, %w: tensor<384x64xbf16>, %c: tensor<?x128xbf16>) -> tensor<?x384xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the rope epilogue takes tiles of whole heads in whole 64-column boxes, but tile_n = 192 is not a multiple of 128 (lcm(64, rope_head_dim = 128); re-run fusion-plan-kernels)}}
  %y = fusion.fused_matmul %x, %w rope(%c, %c : tensor<?x128xbf16>, tensor<?x128xbf16>) {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, rope_head_dim = 128 : i64, transpose_rhs}
      : tensor<?x64xbf16>, tensor<384x64xbf16> -> tensor<?x384xbf16>
  return %y : tensor<?x384xbf16>
}
}

// -----

// The rope epilogue: rotate-half partners 12 columns apart are not in whole 8-column groups.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rope_rotary_24(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>, %c: tensor<?x24xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the rope epilogue cannot rotate these heads: the rotary dimension 24 is not a multiple of 16 (rotate-half partners in whole 8-column groups) (without the fold, fusion-fuse rope-epilogue=false, fusion.rope runs as a row kernel)}}
  %y = fusion.fused_matmul %x, %w rope(%c, %c : tensor<?x24xbf16>, tensor<?x24xbf16>) {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 128, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912>, rope_head_dim = 64 : i64, transpose_rhs}
      : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// The rope epilogue: a cluster along N.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rope_cluster(%x: tensor<?x64xbf16>, %w: tensor<256x64xbf16>, %c: tensor<?x64xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the rope epilogue rotates a tile's whole sums in the consumers' registers: no split-K, stream-K, decode splits or decode body, no cluster along N and no epilogue warps (re-run fusion-plan-kernels, which plans none of them for it)}}
  %y = fusion.fused_matmul %x, %w rope(%c, %c : tensor<?x64xbf16>, tensor<?x64xbf16>) {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 128, tile_k = 64, stages = 4, cluster_n = 2, consumers = 2, smem_bytes = 230912>, rope_head_dim = 64 : i64, transpose_rhs}
      : tensor<?x64xbf16>, tensor<256x64xbf16> -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}
