// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Sizes no op can take: element counts and byte sizes beyond int64, and
// norms over an empty dimension (a division by zero). Each case is a
// minimized input that once crashed or ran away in a later pass.

// A static shape whose element count overflows int64.
func.func @element_count_overflow(%x: tensor<4611686018427387904x4xbf16>) -> tensor<4611686018427387904x4xbf16> {
  // expected-error @below {{'fusion.rms_norm' op expected operand #0 of type 'tensor<4611686018427387904x4xbf16>' to have an element count that fits in 64 bits (at most 2^63 - 1), but [4611686018427387904, 4] overflows it}}
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4611686018427387904x4xbf16> -> tensor<4611686018427387904x4xbf16>
  return %y : tensor<4611686018427387904x4xbf16>
}

// -----

// A static shape whose element count fits but whose byte size overflows int64.
func.func @byte_size_overflow(%a: tensor<4611686018427387904x1xbf16>, %b: tensor<1x1xbf16>) -> tensor<4611686018427387904x1xbf16> {
  // expected-error @below {{'fusion.matmul' op expected operand #0 of type 'tensor<4611686018427387904x1xbf16>' to have a byte size that fits in 64 bits (at most 2^63 - 1), but [4611686018427387904, 1] overflows it}}
  %c = fusion.matmul %a, %b : tensor<4611686018427387904x1xbf16>, tensor<1x1xbf16> -> tensor<4611686018427387904x1xbf16>
  return %c : tensor<4611686018427387904x1xbf16>
}

// -----

// A norm over an innermost dimension of size 0.
func.func @norm_empty_row(%x: tensor<64x0xbf16>) -> tensor<64x0xbf16> {
  // expected-error @below {{'fusion.rms_norm' op expected input with a non-empty innermost dimension (the one normalized over), but got [64, 0]}}
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x0xbf16> -> tensor<64x0xbf16>
  return %y : tensor<64x0xbf16>
}

// -----

// A norm epilogue over rows of N = 0 columns (once a division by zero in
// the cost model).
func.func @epilogue_norm_empty_row(%a: tensor<64x128xbf16>, %b: tensor<128x0xbf16>) -> tensor<64x0xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected N > 0 with epilogue rms_norm (it normalizes rows of N columns), but got N = 0}}
  %c = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<64x128xbf16>, tensor<128x0xbf16> -> tensor<64x0xbf16>
  return %c : tensor<64x0xbf16>
}

// -----

// A Lazy Pre-Norm prologue over rows of A of K = 0 columns.
func.func @prologue_norm_empty_row(%a: tensor<64x0xbf16>, %b: tensor<0x128xbf16>) -> tensor<64x128xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op expected K > 0 with prologue rms_norm (it normalizes rows of A of K columns), but got K = 0}}
  %c = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x0xbf16>, tensor<0x128xbf16> -> tensor<64x128xbf16>
  return %c : tensor<64x128xbf16>
}

// -----

// norm_attention whose norms would run over H * D = 0 elements.
func.func @norm_attention_empty_hidden(%q: tensor<2x128x2x0xbf16>, %k: tensor<2x128x2x0xbf16>, %v: tensor<2x128x2x0xbf16>) -> tensor<2x128x2x0xbf16> {
  // expected-error @below {{'fusion.norm_attention' op expected query heads x head dimension > 0 (the norms run over H * D), but got [2, 128, 2, 0]}}
  %o, %m, %r1, %r2 = fusion.norm_attention %q, %k, %v
      {activation = #fusion.activation<identity>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<2x128x2x0xbf16>, tensor<2x128x2x0xbf16>, tensor<2x128x2x0xbf16>
      -> tensor<2x128x2x0xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
  return %o : tensor<2x128x2x0xbf16>
}
