// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of fusion.rope: one case per diagnostic.

func.func @rope_result_type(%x: tensor<4x8xbf16>, %c: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @below {{'fusion.rope' op expected result of input's type 'tensor<4x8xbf16>', but got 'tensor<4x8xf32>'}}
  %y = fusion.rope %x, %c, %c {head_dim = 8 : i64} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// cos and sin have one type (ODS: AllTypesMatch).
func.func @rope_sin_type(%x: tensor<4x8xbf16>, %c: tensor<4x8xbf16>, %s: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-note@-1 {{prior use here}}
  // expected-error @below {{use of value '%s' expects different type than prior uses: 'tensor<4x8xbf16>' vs 'tensor<4x8xf32>'}}
  %y = fusion.rope %x, %c, %s {head_dim = 8 : i64} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

func.func @rope_rank0(%x: tensor<bf16>, %c: tensor<bf16>) -> tensor<bf16> {
  // expected-error @below {{'fusion.rope' op expected input of rank >= 1 ([..., heads x head_dim]), but got rank 0}}
  %y = fusion.rope %x, %c, %c {head_dim = 8 : i64} : tensor<bf16>, tensor<bf16> -> tensor<bf16>
  return %y : tensor<bf16>
}

// -----

func.func @rope_table_rank(%x: tensor<2x4x8xbf16>, %c: tensor<4x8xbf16>) -> tensor<2x4x8xbf16> {
  // expected-error @below {{'fusion.rope' op expected cos of rank 3 (input's: [..., rotary_dim]), but got rank 2}}
  %y = fusion.rope %x, %c, %c {head_dim = 8 : i64} : tensor<2x4x8xbf16>, tensor<4x8xbf16> -> tensor<2x4x8xbf16>
  return %y : tensor<2x4x8xbf16>
}

// -----

func.func @rope_head_dim(%x: tensor<4x24xbf16>, %c: tensor<4x8xbf16>) -> tensor<4x24xbf16> {
  // expected-error @below {{'fusion.rope' op expected head_dim > 0 dividing the innermost dimension of input (heads x head_dim), but got head_dim = 16 and [4, 24]}}
  %y = fusion.rope %x, %c, %c {head_dim = 16 : i64} : tensor<4x24xbf16>, tensor<4x8xbf16> -> tensor<4x24xbf16>
  return %y : tensor<4x24xbf16>
}

// -----

func.func @rope_rotary_dim(%x: tensor<4x16xbf16>, %c: tensor<4x6xbf16>) -> tensor<4x16xbf16> {
  // expected-error @below {{'fusion.rope' op expected a static, even rotary dimension (cos's innermost) in [2, head_dim = 4], but got [4, 6]}}
  %y = fusion.rope %x, %c, %c {head_dim = 4 : i64} : tensor<4x16xbf16>, tensor<4x6xbf16> -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

func.func @rope_leading(%x: tensor<2x4x8xbf16>, %c: tensor<2x3x8xbf16>) -> tensor<2x4x8xbf16> {
  // expected-error @below {{'fusion.rope' op expected cos [2, 3, 8] to have input's leading dimensions [2, 4] or 1 where one table serves them all, but dimension 1 is 3 where input has 4}}
  %y = fusion.rope %x, %c, %c {head_dim = 8 : i64} : tensor<2x4x8xbf16>, tensor<2x3x8xbf16> -> tensor<2x4x8xbf16>
  return %y : tensor<2x4x8xbf16>
}

// -----

// A 2-D input's tables [T, R] serve its rows m mod T: T divides M.
func.func @rope_table_rows(%x: tensor<12x8xbf16>, %c: tensor<5x8xbf16>) -> tensor<12x8xbf16> {
  // expected-error @below {{'fusion.rope' op expected cos [T, R] whose rows T divide the input's rows (row m reads table row m mod T), but got T = 5 and [12, 8]}}
  %y = fusion.rope %x, %c, %c {head_dim = 8 : i64} : tensor<12x8xbf16>, tensor<5x8xbf16> -> tensor<12x8xbf16>
  return %y : tensor<12x8xbf16>
}
