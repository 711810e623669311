// What the attention kernel family refuses, one case per message: the op
// is valid (the CPU lowering takes it) but the sm_90a kernel cannot run it.
// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics

// Jagged q (offsets) in FlashNormAttention with more heads than a norm
// cluster takes (the jagged kernel's limits are the dense one's:
// attention-norm-jagged-sm90a.mlir).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_jagged_heads(%q: tensor<256x8x64xbf16>, %k: tensor<2x64x8x64xbf16>, %v: tensor<2x64x8x64xbf16>, %off: tensor<3xi32>) -> tensor<256x8x64xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected a static head count from 1 to 4 (one CTA per head, the heads of a token in one cluster, whose norms exchange their row sums), but got 8}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<3xi32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<256x8x64xbf16>, tensor<2x64x8x64xbf16>, tensor<2x64x8x64xbf16>
      -> tensor<256x8x64xbf16>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
  return %o : tensor<256x8x64xbf16>
}
}

// -----

// Jagged q in FlashNormAttention with a dynamic head dimension.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_jagged_dynamic_d(%q: tensor<?x2x?xbf16>, %k: tensor<2x64x2x?xbf16>, %v: tensor<2x64x2x?xbf16>, %off: tensor<3xi64>) -> tensor<?x2x?xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected a static head dimension of 64 or 128 (the kernel keeps q and ln_q of its rows in registers beside both accumulators), but got ?}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<3xi64>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x2x?xbf16>, tensor<2x64x2x?xbf16>, tensor<2x64x2x?xbf16>
      -> tensor<?x2x?xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
  return %o : tensor<?x2x?xbf16>
}
}

// -----

// Jagged q in FlashNormAttention with keys longer than D (P takes the
// place of ln_q's rows).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_jagged_long_kv(%q: tensor<256x2x64xbf16>, %k: tensor<2x100x2x64xbf16>, %v: tensor<2x100x2x64xbf16>, %off: tensor<3xi32>) -> tensor<256x2x64xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected a static key/value length from 1 to the head dimension 64 (P takes the place of the group's ln_q rows), but got 100}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<3xi32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<256x2x64xbf16>, tensor<2x100x2x64xbf16>, tensor<2x100x2x64xbf16>
      -> tensor<256x2x64xbf16>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
  return %o : tensor<256x2x64xbf16>
}
}

// -----

// f32 attention.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f32(%q: tensor<2x64x2x64xf32>, %k: tensor<2x64x2x64xf32>, %v: tensor<2x64x2x64xf32>) -> tensor<2x64x2x64xf32> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: expected bf16 or f16 query, key, value and output, but got query of f32}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32> -> tensor<2x64x2x64xf32>
  return %o : tensor<2x64x2x64xf32>
}
}

// -----

// Mixed element types.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mixed(%q: tensor<2x64x2x64xbf16>, %k: tensor<2x64x2x64xf16>, %v: tensor<2x64x2x64xbf16>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: expected key of bf16 (the query's element type), but got f16}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xf16>, tensor<2x64x2x64xbf16> -> tensor<2x64x2x64xbf16>
  return %o : tensor<2x64x2x64xbf16>
}
}

// -----

// A residual of another element type than the output's (the kernel adds
// 16-bit pairs of the output's type).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @residual_type(%q: tensor<2x64x2x64xbf16>, %r: tensor<2x64x2x64xf32>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: expected residual of bf16 (the output's element type), but got f32}}
  %o = fusion.gdpa %q, %q, %q residual(%r : tensor<2x64x2x64xf32>) {activation = #fusion.activation<silu>, scale = 1.0 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16> -> tensor<2x64x2x64xbf16>
  return %o : tensor<2x64x2x64xbf16>
}
}

// -----

// A head dimension that is no multiple of 64.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @head_dim(%q: tensor<2x64x4x32xbf16>, %k: tensor<2x16x4x32xbf16>, %v: tensor<2x16x4x64xbf16>) -> tensor<2x64x4x64xbf16> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: expected a static head dimension D that is a multiple of 64 up to 256 (the kernel's 128-byte swizzled boxes and its 64 x N accumulators), but got 32}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<identity>, scale = 0.125 : f32}
      : tensor<2x64x4x32xbf16>, tensor<2x16x4x32xbf16>, tensor<2x16x4x64xbf16> -> tensor<2x64x4x64xbf16>
  return %o : tensor<2x64x4x64xbf16>
}
}

// -----

// A value head dimension over 256.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @value_dim(%q: tensor<2x64x1x64xbf16>, %k: tensor<2x16x1x64xbf16>, %v: tensor<2x16x1x320xbf16>) -> tensor<2x64x1x320xbf16> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: expected a static value head dimension Dv that is a multiple of 64 up to 256 (the kernel's 128-byte swizzled boxes and its 64 x N accumulators), but got 320}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<identity>, scale = 0.125 : f32}
      : tensor<2x64x1x64xbf16>, tensor<2x16x1x64xbf16>, tensor<2x16x1x320xbf16> -> tensor<2x64x1x320xbf16>
  return %o : tensor<2x64x1x320xbf16>
}
}

// -----

// Keys and values too long to hold whole.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @long_kv(%q: tensor<2x64x1x64xbf16>, %k: tensor<2x512x1x64xbf16>, %v: tensor<2x512x1x64xbf16>) -> tensor<2x64x1x64xbf16> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: expected a static key/value length from 1 to 256 (keys and values are held whole in shared memory), but got 512}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<2x64x1x64xbf16>, tensor<2x512x1x64xbf16>, tensor<2x512x1x64xbf16> -> tensor<2x64x1x64xbf16>
  return %o : tensor<2x64x1x64xbf16>
}
}

// -----

// One stage of q, k and v plus the P tiles over the shared memory.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @too_big(%q: tensor<2x64x1x256xbf16>, %k: tensor<2x256x1x256xbf16>, %v: tensor<2x256x1x256xbf16>) -> tensor<2x64x1x256xbf16> {
  // expected-error @below {{'fusion.gdpa' op cannot generate an sm_90a attention kernel: needs 394240 bytes of shared memory for D = 256, Dv = 256 and a key/value length of 256 (one stage of q, k, v and the P tiles), but sm_90a has 232448}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<relu>, scale = 0.125 : f32}
      : tensor<2x64x1x256xbf16>, tensor<2x256x1x256xbf16>, tensor<2x256x1x256xbf16> -> tensor<2x64x1x256xbf16>
  return %o : tensor<2x64x1x256xbf16>
}
}

// -----

// FlashNormAttention: more heads than a norm cluster holds.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_heads(%q: tensor<2x128x8x64xbf16>, %k: tensor<2x64x8x64xbf16>, %v: tensor<2x64x8x64xbf16>) -> tensor<2x128x8x64xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected a static head count from 1 to 4 (one CTA per head, the heads of a token in one cluster, whose norms exchange their row sums), but got 8}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x128x8x64xbf16>, tensor<2x64x8x64xbf16>, tensor<2x64x8x64xbf16>
      -> tensor<2x128x8x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  return %o : tensor<2x128x8x64xbf16>
}
}

// -----

// FlashNormAttention: a head dimension other than 64 or 128.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_head_dim(%q: tensor<2x128x2x256xbf16>, %k: tensor<2x64x2x256xbf16>, %v: tensor<2x64x2x256xbf16>) -> tensor<2x128x2x256xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected a static head dimension of 64 or 128 (the kernel keeps q and ln_q of its rows in registers beside both accumulators), but got 256}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x128x2x256xbf16>, tensor<2x64x2x256xbf16>, tensor<2x64x2x256xbf16>
      -> tensor<2x128x2x256xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  return %o : tensor<2x128x2x256xbf16>
}
}

// -----

// FlashNormAttention: more keys than the head dimension.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_kv(%q: tensor<2x128x2x64xbf16>, %k: tensor<2x100x2x64xbf16>, %v: tensor<2x100x2x64xbf16>) -> tensor<2x128x2x64xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected a static key/value length from 1 to the head dimension 64 (P takes the place of the group's ln_q rows), but got 100}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x128x2x64xbf16>, tensor<2x100x2x64xbf16>, tensor<2x100x2x64xbf16>
      -> tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  return %o : tensor<2x128x2x64xbf16>
}
}

// -----

// FlashNormAttention in f32.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @na_f32(%q: tensor<2x128x2x64xf32>, %k: tensor<2x64x2x64xf32>, %v: tensor<2x64x2x64xf32>) -> tensor<2x128x2x64xf32> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_90a attention kernel: expected bf16 or f16 query, key, value and output, but got query of f32}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x128x2x64xf32>, tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32>
      -> tensor<2x128x2x64xf32>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  return %o : tensor<2x128x2x64xf32>
}
}

// -----

// FlashNormAttention saving ln_q and h (for a backward of unfused ops) with
// jagged q on sm_100a: its jagged row stores do not write them.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @na_jagged_saves(%q: tensor<256x2x64xbf16>, %k: tensor<2x64x2x64xbf16>, %v: tensor<2x64x2x64xbf16>, %off: tensor<3xi32>) -> tensor<256x2x64xbf16> {
  // expected-error @below {{'fusion.norm_attention' op cannot generate an sm_100a attention kernel: expected dense q to save ln_q and h on sm_100a (its jagged row stores do not write them yet), but got jagged q (offsets)}}
  %o, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %k, %v offsets(%off : tensor<3xi32>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<256x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
      -> tensor<256x2x64xbf16>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x2x64xbf16>, tensor<256x2x64xbf16>
  return %h : tensor<256x2x64xbf16>
}
}
