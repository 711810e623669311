// fusion-plan-kernels{report=true}: a remark per planned kernel, saying what
// it chose: the GEMM's configuration (the fusion.kernel it attaches), and
// the attention kernel's plan (the layout convert-fusion-to-gpu builds:
// items, stages and shared memory, the grid; a cluster of the heads with the
// norms).
// RUN: fusion-opt %s -split-input-file "--fusion-plan-kernels=report=true small-m=false" -verify-diagnostics -o /dev/null
// (small-m=false: the small-M body of dynamic token counts is tested in
// Dialect/Fusion/Transforms/plan-kernels-small-m.mlir and
// Conversion/FusionToGPU/small-m-sm90a.mlir.)

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @linear(%x: tensor<?x512xbf16>, %w: tensor<1024x512xbf16>) -> tensor<?x1024xbf16> {
  // expected-remark @below {{GEMM kernel on sm_90a: #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912, cluster_m = 2>}}
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
}

// -----

// Dense gdpa: two stages fit (Kunlun's D = L_kv = 128); a key length of 200
// (padded to 256) with D = 128 leaves room for one.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @gdpa(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @below {{attention kernel on sm_90a: work items of 128 query tokens (2 consumer warpgroups of 64 rows) over (batch, head, token tile); keys and values whole in shared memory (L_kv 128 padded to 128); 2 stages of Q, K, V: 230400 bytes of shared memory of 232448; a persistent grid of min(items, SMs) CTAs}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}
func.func @long_kv(%q: tensor<?x512x1x128xf16>, %k: tensor<?x200x1x128xf16>, %v: tensor<?x200x1x64xf16>) -> tensor<?x512x1x64xf16> {
  // expected-remark @below {{(L_kv 200 padded to 256); 1 stage of Q, K, V: 148480 bytes}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x512x1x128xf16>, tensor<?x200x1x128xf16>, tensor<?x200x1x64xf16> -> tensor<?x512x1x64xf16>
  return %o : tensor<?x512x1x64xf16>
}
// Two stages where the groups' output buffers take Dv = 64 columns, not
// L_kv's 192 (sm_90a holds P in registers; with [64, 192] buffers it was
// one stage, 156672 bytes).
func.func @kv150(%q: tensor<?x512x1x128xbf16>, %k: tensor<?x150x1x128xbf16>, %v: tensor<?x150x1x64xbf16>) -> tensor<?x512x1x64xbf16> {
  // expected-remark @below {{(L_kv 150 padded to 192); 2 stages of Q, K, V: 230400 bytes}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<?x512x1x128xbf16>, tensor<?x150x1x128xbf16>, tensor<?x150x1x64xbf16> -> tensor<?x512x1x64xbf16>
  return %o : tensor<?x512x1x64xbf16>
}
// D = Dv = 256 past 64 keys: K and V do not fit beside the tiles; the
// report says so (the conversion refuses it with the same words).
func.func @wide_kv128(%q: tensor<?x?x2x256xbf16>, %k: tensor<?x128x2x256xbf16>, %v: tensor<?x128x2x256xbf16>) -> tensor<?x?x2x256xbf16> {
  // expected-remark @below {{no attention kernel on sm_90a: needs 263168 bytes of shared memory for D = 256, Dv = 256 and a key/value length of 128 (one stage of q, k, v and the P tiles), but sm_90a has 232448}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.0625 : f32}
      : tensor<?x?x2x256xbf16>, tensor<?x128x2x256xbf16>, tensor<?x128x2x256xbf16> -> tensor<?x?x2x256xbf16>
  return %o : tensor<?x?x2x256xbf16>
}
}

// -----

// Jagged q: (window, head) units.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @jagged(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %off: tensor<?xi32>) -> tensor<?x2x128xbf16> {
  // expected-remark @below {{over (128-token window, head), one item per sequence the window overlaps (a window kernel finds each window's first sequence)}}
  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?xi32>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x2x128xbf16>
  return %o : tensor<?x2x128xbf16>
}
}

// -----

// FlashNormAttention: a cluster of the 2 heads' CTAs; the slots and the
// staged norm parameters beside two stages.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @block(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @below {{attention kernel on sm_90a: work items of 128 query tokens (2 consumer warpgroups of 64 rows) over (batch, token tile), each taken by a cluster of 2 CTAs, one per head (the norms' row sums through DSMEM); keys and values whole in shared memory (L_kv 128 padded to 128); 2 stages of Q, K, V: 205312 bytes of shared memory of 232448; a persistent grid of min(items, co-resident clusters) clusters}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
      -> tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o : tensor<?x?x2x128xbf16>
}
}

// -----

// The attention backward (fusion.gdpa_grad): Kunlun's D = Dv = L_kv = 128
// takes two consumer warpgroups and two stages of (Q, dO); L_kv = 64 one
// group and three stages; one the kernel does not take says why.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @gdpa_grad(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @below {{attention backward kernel on sm_90a: units (batch, head) with K, V whole in shared memory (L_kv 128 padded to 128), 2 consumer warpgroups of 64 keys (dK, dV in registers over the unit's query tiles of 64 tokens, dQ through dS in shared memory); 2 stages of Q, dO: 214016 bytes of shared memory of 232448; a persistent grid of min(units, SMs) CTAs}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq : tensor<?x?x2x128xbf16>
}
func.func @gdpa_grad_kv64(%do: tensor<?x?x1x128xf16>, %q: tensor<?x?x1x128xf16>, %k: tensor<?x64x1x128xf16>, %v: tensor<?x64x1x128xf16>) -> tensor<?x?x1x128xf16> {
  // expected-remark @below {{(L_kv 64 padded to 64), 1 consumer warpgroup of 64 keys (dK, dV in registers over the unit's query tiles of 64 tokens, dQ through dS in shared memory); 3 stages of Q, dO: 173056 bytes}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<relu>, scale = 0.0625 : f32}
      : tensor<?x?x1x128xf16>, tensor<?x?x1x128xf16>, tensor<?x64x1x128xf16>, tensor<?x64x1x128xf16> -> tensor<?x?x1x128xf16>, tensor<?x64x1x128xf16>, tensor<?x64x1x128xf16>
  return %dq : tensor<?x?x1x128xf16>
}
func.func @gdpa_grad_two_passes(%do: tensor<?x?x2x64xbf16>, %q: tensor<?x?x2x64xbf16>, %k: tensor<?x256x2x64xbf16>, %v: tensor<?x256x2x64xbf16>) -> tensor<?x?x2x64xbf16> {
  // expected-remark @below {{attention backward kernel on sm_90a: units (batch, head) in 2 passes of 128 keys over the query tiles (L_kv 256; dQ's partial sums in f32 through global memory), 2 consumer warpgroups of 64 keys (dK, dV in registers over the unit's query tiles of 64 tokens, dQ through dS in shared memory); 3 stages of Q, dO: 148480 bytes}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x256x2x64xbf16>, tensor<?x256x2x64xbf16> -> tensor<?x?x2x64xbf16>, tensor<?x256x2x64xbf16>, tensor<?x256x2x64xbf16>
  return %dq : tensor<?x?x2x64xbf16>
}
func.func @gdpa_grad_long(%do: tensor<?x?x2x64xbf16>, %q: tensor<?x?x2x64xbf16>, %k: tensor<?x300x2x64xbf16>, %v: tensor<?x300x2x64xbf16>) -> tensor<?x?x2x64xbf16> {
  // expected-remark @below {{no attention backward kernel on sm_90a: expected a static key/value length from 1 to 256 for the backward (one consumer warpgroup of 64 keys per 64, K and V in shared memory 128 keys at a time, 64 for heads past 128 columns), but got 300}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x300x2x64xbf16>, tensor<?x300x2x64xbf16> -> tensor<?x?x2x64xbf16>, tensor<?x300x2x64xbf16>, tensor<?x300x2x64xbf16>
  return %dq : tensor<?x?x2x64xbf16>
}
}
