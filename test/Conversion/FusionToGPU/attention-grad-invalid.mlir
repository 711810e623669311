// What the attention backward kernel (fusion.gdpa_grad) refuses, one case
// per message: the op is valid (the CPU lowering takes it) but the sm_90a
// kernel cannot run it.
// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics

// sm_100a: D = 256 (dK and dV of 128 keys beside S^T and dP^T would need
// 256 + 256 + 64 > 512 tensor-memory columns).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @sm100_head_dim(%do: tensor<2x64x2x64xbf16>, %q: tensor<2x64x2x256xbf16>, %k: tensor<2x64x2x256xbf16>, %v: tensor<2x64x2x64xbf16>) -> tensor<2x64x2x256xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_100a attention kernel: expected a static head dimension D of 64 or 128 (the backward keeps dK and dV of its 128 keys in tensor memory beside S^T and dP^T: 256 + D + Dv columns), but got 256}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x256xbf16>, tensor<2x64x2x256xbf16>, tensor<2x64x2x64xbf16> -> tensor<2x64x2x256xbf16>, tensor<2x64x2x256xbf16>, tensor<2x64x2x64xbf16>
  return %dq : tensor<2x64x2x256xbf16>
}
}

// -----

// sm_100a: L_kv = 300, more than two passes of one M = 128 MMA.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @sm100_long_kv(%do: tensor<2x64x2x64xbf16>, %q: tensor<2x64x2x64xbf16>, %k: tensor<2x300x2x64xbf16>, %v: tensor<2x300x2x64xbf16>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_100a attention kernel: expected a static key/value length from 1 to 256 for the backward (one M = 128 MMA over 128 keys at a time, K and V in shared memory 128 keys at a time), but got 300}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x300x2x64xbf16>, tensor<2x300x2x64xbf16> -> tensor<2x64x2x64xbf16>, tensor<2x300x2x64xbf16>, tensor<2x300x2x64xbf16>
  return %dq : tensor<2x64x2x64xbf16>
}
}

// -----

// f32 backward.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f32(%do: tensor<2x64x2x64xf32>, %q: tensor<2x64x2x64xf32>, %k: tensor<2x64x2x64xf32>, %v: tensor<2x64x2x64xf32>) -> tensor<2x64x2x64xf32> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected bf16 or f16 grad, query, key, value and gradients, but got query of f32}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32> -> tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32>, tensor<2x64x2x64xf32>
  return %dq : tensor<2x64x2x64xf32>
}
}

// -----

// Mixed element types: an f16 key beside a bf16 query.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mixed(%do: tensor<2x64x2x64xbf16>, %q: tensor<2x64x2x64xbf16>, %k: tensor<2x64x2x64xf16>, %v: tensor<2x64x2x64xbf16>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected key of bf16 (the query's element type), but got f16}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xf16>, tensor<2x64x2x64xbf16> -> tensor<2x64x2x64xbf16>, tensor<2x64x2x64xf16>, tensor<2x64x2x64xbf16>
  return %dq : tensor<2x64x2x64xbf16>
}
}

// -----

// Mixed element types: an f32 residual (added to dq) beside a bf16 query.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mixed_residual(%do: tensor<2x64x2x64xbf16>, %q: tensor<2x64x2x64xbf16>, %k: tensor<2x64x2x64xbf16>, %r: tensor<2x64x2x64xf32>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected residual of bf16 (the query's element type), but got f32}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %k residual(%r : tensor<2x64x2x64xf32>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16> -> tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>
  return %dq : tensor<2x64x2x64xbf16>
}
}

// -----

// D = 320: past the column passes' 256.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @head_dim(%do: tensor<2x64x2x64xbf16>, %q: tensor<2x64x2x320xbf16>, %k: tensor<2x64x2x320xbf16>, %v: tensor<2x64x2x64xbf16>) -> tensor<2x64x2x320xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected a static head dimension D that is a multiple of 64 up to 256 (the backward keeps dK and dV of its 64 keys in registers, 128 columns per pass over the query tiles), but got 320}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x320xbf16>, tensor<2x64x2x320xbf16>, tensor<2x64x2x64xbf16> -> tensor<2x64x2x320xbf16>, tensor<2x64x2x320xbf16>, tensor<2x64x2x64xbf16>
  return %dq : tensor<2x64x2x320xbf16>
}
}

// -----

// Dv = 96: not a multiple of the 128-byte swizzled boxes' 64 columns.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @value_dim(%do: tensor<2x64x2x96xbf16>, %q: tensor<2x64x2x64xbf16>, %k: tensor<2x64x2x64xbf16>, %v: tensor<2x64x2x96xbf16>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected a static value head dimension Dv that is a multiple of 64 up to 256 (the backward keeps dK and dV of its 64 keys in registers, 128 columns per pass over the query tiles), but got 96}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x96xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x96xbf16> -> tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x64x2x96xbf16>
  return %dq : tensor<2x64x2x64xbf16>
}
}

// -----

// L_kv = 300: more than two passes of 128 keys.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @long_kv(%do: tensor<2x64x2x64xbf16>, %q: tensor<2x64x2x64xbf16>, %k: tensor<2x300x2x64xbf16>, %v: tensor<2x300x2x64xbf16>) -> tensor<2x64x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected a static key/value length from 1 to 256 for the backward (one consumer warpgroup of 64 keys per 64, K and V in shared memory 128 keys at a time, 64 for heads past 128 columns), but got 300}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<2x64x2x64xbf16>, tensor<2x64x2x64xbf16>, tensor<2x300x2x64xbf16>, tensor<2x300x2x64xbf16> -> tensor<2x64x2x64xbf16>, tensor<2x300x2x64xbf16>, tensor<2x300x2x64xbf16>
  return %dq : tensor<2x64x2x64xbf16>
}
}

// -----

// A dynamic key/value length.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dynamic_kv(%do: tensor<?x?x2x64xbf16>, %q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>) -> tensor<?x?x2x64xbf16> {
  // expected-error @below {{'fusion.gdpa_grad' op cannot generate an sm_90a attention kernel: expected a static key/value length from 1 to 256 for the backward (one consumer warpgroup of 64 keys per 64, K and V in shared memory 128 keys at a time, 64 for heads past 128 columns), but got ?}}
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16> -> tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>
  return %dq : tensor<?x?x2x64xbf16>
}
}
