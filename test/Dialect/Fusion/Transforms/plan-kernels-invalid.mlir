// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels -verify-diagnostics

// Test that a module holding a GEMM but no fusion.target is refused.
// expected-error @below {{'builtin.module' op expected a fusion.target on the module (e.g. fusion.target = #fusion.target<"sm_90a">) to plan its GEMM kernels for, but got none}}
module {
func.func @no_target(%a: tensor<256x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<256x128xbf16> {
  %c = fusion.matmul %a, %b : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>
  return %c : tensor<256x128xbf16>
}
}

// -----

// Test that fusion.norm_attention_grad, which has no kernel yet, is refused
// (the forward has one: attention-sm90a.mlir).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @norm_attention_grad_left(%do: tensor<2x128x2x64xbf16>, %q: tensor<2x128x2x64xbf16>, %k: tensor<2x128x2x64xbf16>, %v: tensor<2x128x2x64xbf16>, %m: tensor<2x128xf32>, %r: tensor<2x128xf32>, %rr: tensor<2x128xf32>) -> tensor<2x128x2x64xbf16> {
  // expected-error @below {{'fusion.norm_attention_grad' op has no GPU kernel yet; fusion-plan-kernels plans fusion.fused_matmul only}}
  %dq, %dk, %dv = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>,
        tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
      -> tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>
  return %dq : tensor<2x128x2x64xbf16>
}
}

// -----

// Test that a weight gradient (transpose_lhs: lhs [K, M], M its TMA rows)
// needs a static M, while its K, the token count, may be dynamic.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @transpose_lhs_dynamic_m(%x: tensor<4096x?xbf16>, %dy: tensor<4096x256xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{'fusion.matmul' op expected a static M (the TMA descriptors and the tiling are planned for it), but got M = ?}}
  %dw = fusion.matmul %x, %dy {transpose_lhs} : tensor<4096x?xbf16>, tensor<4096x256xbf16> -> tensor<?x256xbf16>
  return %dw : tensor<?x256xbf16>
}
}

// -----

// Test that a weight gradient's M must make 16-byte TMA rows.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @transpose_lhs_odd_m(%x: tensor<?x500xbf16>, %dy: tensor<?x256xbf16>) -> tensor<500x256xbf16> {
  // expected-error @below {{'fusion.matmul' op expected M to be a multiple of 8 (TMA needs 16-byte row strides: M x 2 bytes), but got M = 500}}
  %dw = fusion.matmul %x, %dy {transpose_lhs} : tensor<?x500xbf16>, tensor<?x256xbf16> -> tensor<500x256xbf16>
  return %dw : tensor<500x256xbf16>
}
}

// -----

// Test that f32 operands are refused (the diagnostic lands on the matmul the
// user wrote, which stays in place).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f32_operands(%a: tensor<256x64xf32>, %b: tensor<64x128xf32>) -> tensor<256x128xf32> {
  // expected-error @below {{'fusion.matmul' op expected lhs of element type bf16 or f16 (the MMA reads bf16/f16 and accumulates in f32), but got f32}}
  %c = fusion.matmul %a, %b : tensor<256x64xf32>, tensor<64x128xf32> -> tensor<256x128xf32>
  return %c : tensor<256x128xf32>
}
}

// -----

// Test that lhs and rhs of different element types are refused.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mixed_types(%a: tensor<256x64xbf16>, %b: tensor<64x128xf16>) -> tensor<256x128xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected lhs and rhs of one element type (one MMA instruction kind), but got bf16 (lhs) and f16 (rhs)}}
  %c = fusion.fused_matmul %a, %b : tensor<256x64xbf16>, tensor<64x128xf16> -> tensor<256x128xbf16>
  return %c : tensor<256x128xbf16>
}
}

// -----

// Test that a K that is not a multiple of 8 is refused (TMA row strides).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @k_unaligned(%a: tensor<256x100xbf16>, %b: tensor<100x128xbf16>) -> tensor<256x128xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected K to be a multiple of 8 (TMA needs 16-byte row strides: K x 2 bytes), but got K = 100}}
  %c = fusion.fused_matmul %a, %b : tensor<256x100xbf16>, tensor<100x128xbf16> -> tensor<256x128xbf16>
  return %c : tensor<256x128xbf16>
}
}

// -----

// Test that an N that is not a multiple of 8 is refused (TMA row strides).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @n_unaligned(%a: tensor<256x64xbf16>, %b: tensor<64x100xbf16>) -> tensor<256x100xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected N to be a multiple of 8 (TMA needs 16-byte row strides: N x 2 bytes), but got N = 100}}
  %c = fusion.fused_matmul %a, %b : tensor<256x64xbf16>, tensor<64x100xbf16> -> tensor<256x100xbf16>
  return %c : tensor<256x100xbf16>
}
}

// -----

// Test that a dynamic K is refused.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @k_dynamic(%a: tensor<256x?xbf16>, %b: tensor<?x128xbf16>) -> tensor<256x128xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected a static K (the TMA descriptors and the tiling are planned for it), but got K = ?}}
  %c = fusion.fused_matmul %a, %b : tensor<256x?xbf16>, tensor<?x128xbf16> -> tensor<256x128xbf16>
  return %c : tensor<256x128xbf16>
}
}

// -----

// Test that a dynamic N is refused.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @n_dynamic(%a: tensor<256x64xbf16>, %b: tensor<64x?xbf16>) -> tensor<256x?xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected a static N (the TMA descriptors and the tiling are planned for it), but got N = ?}}
  %c = fusion.fused_matmul %a, %b : tensor<256x64xbf16>, tensor<64x?xbf16> -> tensor<256x?xbf16>
  return %c : tensor<256x?xbf16>
}
}

// -----

// Test that a norm epilogue whose row needs more CTAs than a row may span
// (16 on sm_90a, cluster or not) is refused with planEpilogueNorm's reason.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_too_wide(%a: tensor<256x64xbf16>, %b: tensor<64x8192xbf16>) -> tensor<256x8192xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected the CTAs of a row block to cover a row of the rms_norm epilogue, but N = 8192 needs 32 CTAs of at most 256 columns, more than the 16 a row may span on sm_90a}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x64xbf16>, tensor<64x8192xbf16> -> tensor<256x8192xbf16>
  return %y : tensor<256x8192xbf16>
}
}

// -----

// Test that on sm_100a a row through global memory may span at most 32 CTAs
// of 512 columns (TargetInfo::maxGlobalRowCTAs): N = 16896 needs 33.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @row_too_wide_sm100a(%a: tensor<256x64xbf16>, %b: tensor<64x16896xbf16>) -> tensor<256x16896xf32> {
  // expected-error @below {{'fusion.fused_matmul' op expected the CTAs of a row block to cover a row of the layer_norm epilogue, but N = 16896 needs 33 CTAs of at most 512 columns, more than the 32 a row may span on sm_100a}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x64xbf16>, tensor<64x16896xbf16> -> tensor<256x16896xf32>
  return %y : tensor<256x16896xf32>
}
}

// -----

// Test that a configuration whose shared memory does not fit even with 2
// stages is refused, naming the bytes, the budget and where they go: on
// sm_90a an rms_norm_grad epilogue over N = 512 with an f32 norm_input and
// an f32 dx (no epilogue warps: the consumers read the norm_input tile,
// 128 * 256 * 4 = 131072, beside the ring), a cluster of 2:
// 2 * (128 + 256) * 64 * 2 + 512 + 131072 + 2 * 2 * 128 * 4 + 1024 =
// 232960. (A bf16 dx runs in the epilogue warps, which read norm_input
// from global memory: no tile. On sm_100a the kernel reads it from global
// memory too.)
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @smem_overflow(%dy: tensor<4096x512xbf16>, %w: tensor<512x512xbf16>,
    %x: tensor<4096x512xf32>, %rstd: tensor<4096xf32>) -> tensor<4096x512xf32> {
  // expected-error @below {{'fusion.fused_matmul' op expected at most 232448 bytes of shared memory (the sm_90a opt-in limit per CTA), but a 128x256x64 tile with 2 stages and cluster_n = 2 needs 232960 (512 over; A/B ring 98304, row sums 512, norm_input tile 131072, DSMEM slots 2048, alignment 1024)}}
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<4096x512xf32>) rstd(%rstd : tensor<4096xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs}
      : tensor<4096x512xbf16>, tensor<512x512xbf16> -> tensor<4096x512xf32>
  return %dx : tensor<4096x512xf32>
}
}

// -----

// Test that a GEMM with M = 0 is refused (it compiled, and every call failed).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @m_zero(%a: tensor<0x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<0x128xbf16> {
  // expected-error @below {{'fusion.matmul' op expected M > 0 (TMA tensor maps and the launch need at least one element along each dimension: every call would fail), but got M = 0}}
  %c = fusion.matmul %a, %b : tensor<0x64xbf16>, tensor<64x128xbf16> -> tensor<0x128xbf16>
  return %c : tensor<0x128xbf16>
}
}

// -----

// Test that a GEMM with K = 0 is refused.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @k_zero(%a: tensor<256x0xbf16>, %b: tensor<0x128xbf16>) -> tensor<256x128xbf16> {
  // expected-error @below {{'fusion.matmul' op expected K > 0 (TMA tensor maps and the launch need at least one element along each dimension: every call would fail), but got K = 0}}
  %c = fusion.matmul %a, %b : tensor<256x0xbf16>, tensor<0x128xbf16> -> tensor<256x128xbf16>
  return %c : tensor<256x128xbf16>
}
}

// -----

// Test that a GEMM with M = 2^40, beyond what a TMA dimension spans, is refused.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @m_huge(%a: tensor<1099511627776x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<1099511627776x128xbf16> {
  // expected-error @below {{'fusion.matmul' op expected M <= 4294967296 (the elements one TMA dimension spans on sm_90a; every call would fail), but got M = 1099511627776}}
  %c = fusion.matmul %a, %b : tensor<1099511627776x64xbf16>, tensor<64x128xbf16> -> tensor<1099511627776x128xbf16>
  return %c : tensor<1099511627776x128xbf16>
}
}


// -----

// Test that the row dot's operand must have A's element type (its tiles ride
// in the ring beside A's).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_type(%dy: tensor<256x512xbf16>, %w: tensor<512x1024xbf16>, %g: tensor<1024xbf16>, %x: tensor<256x1024xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xf32>) -> tensor<256x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected row_dot of lhs's element type bf16 (its tiles ride in the ring beside A's), but got f32}}
  %dx, %dg = fusion.fused_matmul %dy, %w norm_weight(%g : tensor<1024xbf16>) norm_input(%x : tensor<256x1024xbf16>)
      rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>, tensor<1024xf32>
  return %dx : tensor<256x1024xbf16>
}
}

// -----

// Test that a row-dot grad epilogue needs a 16-bit norm_input (its tiles come
// through the ring).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_f32_norm_input(%dy: tensor<256x512xbf16>, %w: tensor<512x1024xbf16>, %g: tensor<1024xbf16>, %x: tensor<256x1024xf32>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>) -> tensor<256x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected a 16-bit norm_input with row_dot (its tiles come through the ring as 16-bit values), but got f32}}
  %dx, %dg = fusion.fused_matmul %dy, %w norm_weight(%g : tensor<1024xbf16>) norm_input(%x : tensor<256x1024xf32>)
      rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>, tensor<1024xf32>
  return %dx : tensor<256x1024xbf16>
}
}

// -----

// Test that the row dot's vectors must have A's element type (they come by
// TMA beside A's tiles).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @row_dot_vector_type(%dy: tensor<256x512xbf16>, %w: tensor<512x1024xbf16>, %g: tensor<1024xbf16>, %x: tensor<256x1024xbf16>, %r: tensor<256xf32>, %y: tensor<256x512xbf16>, %c: tensor<512xf32>) -> tensor<256x1024xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected row_dot_shift and row_dot_sum of lhs's element type bf16 (they come by TMA beside A's tiles), but got f32}}
  %dx, %dg = fusion.fused_matmul %dy, %w norm_weight(%g : tensor<1024xbf16>) norm_input(%x : tensor<256x1024xbf16>)
      rstd(%r : tensor<256xf32>) row_dot(%y : tensor<256x512xbf16>) row_dot_shift(%c : tensor<512xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>}
      : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>, tensor<1024xf32>
  return %dx : tensor<256x1024xbf16>
}
}

// -----

// Test that a norm over column groups of 32 is refused on sm_100a, whose
// epilogue reads rows in 64-column chunks (sm_90a takes it).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @groups_of_32_sm100a(%a: tensor<256x64xbf16>, %b: tensor<64x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected tiles that hold whole groups of the rms_norm epilogue, but a group of 32 columns is not a multiple of 64 (the sm_100a epilogue's 64-column chunks of tensor memory)}}
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, norm_group_size = 32 : i64}
      : tensor<256x64xbf16>, tensor<64x256xbf16> -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}
}

// -----

// Test that a rope epilogue the GEMM kernel cannot rotate is refused
// (fusion-rope-epilogue leaves such a rope unfolded; this one was written
// by hand): rotate-half partners 12 columns apart.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rope_rotary_24(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>, %c: tensor<?x24xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected a rope epilogue the GEMM kernel can rotate, but the rotary dimension 24 is not a multiple of 16 (rotate-half partners in whole 8-column groups) (without the fold, fusion-fuse rope-epilogue=false, fusion.rope runs as a row kernel)}}
  %y = fusion.fused_matmul %x, %w rope(%c, %c : tensor<?x24xbf16>, tensor<?x24xbf16>) {rope_head_dim = 64 : i64, transpose_rhs}
      : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}
