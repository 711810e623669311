// RUN: fusion-opt %s -split-input-file -fusion-epilogue-norm=report=true -verify-diagnostics -o /dev/null
// Test that sm_100a's 512-column TMEM accumulator changes the decisions.

// N = 512 fits one CTA on sm_100a (it takes a cluster of 2 on sm_90a).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @single(%a: tensor<64x64xbf16>, %b: tensor<64x512xbf16>) -> tensor<64x512xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x512xbf16> -> tensor<64x512xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: one CTA holds the whole row (N = 512)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x512xbf16> -> tensor<64x512xbf16>
  return %y : tensor<64x512xbf16>
}
}

// -----

// N = 8192 fits a cluster of 16 on sm_100a.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @cluster16(%a: tensor<64x64xbf16>, %b: tensor<64x8192xbf16>) -> tensor<64x8192xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x8192xbf16> -> tensor<64x8192xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: a cluster of 16 CTAs along N, 512 columns each, exchanging partial sums through DSMEM (non-portable cluster size)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x8192xbf16> -> tensor<64x8192xbf16>
  return %y : tensor<64x8192xbf16>
}
}

// -----

// N = 1032 needs 3 slices of at most 512 (3 stays 3, CostModel.cpp), of
// ceil(1032 / 3) = 344 columns, rounded up to 384 (a multiple of 64: the
// kernel stages B in 64-column TMA boxes, as on sm_90a): the last CTA holds
// 264.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @granularity(%a: tensor<64x64xbf16>, %b: tensor<64x1032xbf16>) -> tensor<64x1032xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x1032xbf16> -> tensor<64x1032xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: a cluster of 3 CTAs along N, 384 columns each (the last 264), exchanging partial sums through DSMEM}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x1032xbf16> -> tensor<64x1032xbf16>
  return %y : tensor<64x1032xbf16>
}
}

// -----

// N = 12288 needs 24 CTAs of 512 columns, more than a cluster of 16: the
// row statistics go through global memory, the tile waiting in tensor
// memory (so an f32 output takes it too, unlike on sm_90a).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @global_rows(%a: tensor<64x64xbf16>, %b: tensor<64x12288xbf16>) -> tensor<64x12288xf32> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x12288xbf16> -> tensor<64x12288xf32>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: CTAs of 512 columns each, exchanging partial statistics through global memory (each tile waits in tensor memory until its row block's statistics are complete)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x12288xf32> -> tensor<64x12288xf32>
  return %y : tensor<64x12288xf32>
}
}

// -----

// N = 16896 needs 33 CTAs of 512 columns, more than a row may span through
// global memory on sm_100a (TargetInfo::maxGlobalRowCTAs).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @too_wide(%a: tensor<64x64xbf16>, %b: tensor<64x16896xbf16>) -> tensor<64x16896xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x16896xbf16> -> tensor<64x16896xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: N = 16896 needs 33 CTAs of at most 512 columns, more than the 32 a row may span on sm_100a}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x16896xbf16> -> tensor<64x16896xbf16>
  return %y : tensor<64x16896xbf16>
}
}

// -----

// A norm whose input has other users (a training step's forward) is fused
// with save_norm_input on sm_100a too: the epilogue warpgroup's first pass
// stores the input beside the output.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @saved_input(%a: tensor<64x64xbf16>, %b: tensor<64x1024xbf16>) -> (tensor<64x1024xbf16>, tensor<64x1024xbf16>) {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul, also storing its input (the GEMM result) for its 1 other user (save_norm_input): a cluster of 2 CTAs along N, 512 columns each, exchanging partial sums through DSMEM}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  return %y, %c : tensor<64x1024xbf16>, tensor<64x1024xbf16>
}
}

// -----

// A per-head norm (Qwen3's q_norm) over heads of 128: a group after the
// other in the epilogue warpgroup's 64-column chunks.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @per_head(%x: tensor<64x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>) -> tensor<64x16x128xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<64x2048xbf16>, tensor<2048x2048xbf16> -> tensor<64x2048xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [64, 16, 128] : tensor<64x2048xbf16> into tensor<64x16x128xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul over groups of 128 columns (norm_group_size): each CTA normalizes whole groups of 128 columns (N = 2048 as 16 groups, tiles of 256 columns), no exchange}}
  %y = fusion.rms_norm %e weight(%g : tensor<128xbf16>) {epsilon = 1.0e-06 : f32} : tensor<64x16x128xbf16> -> tensor<64x16x128xbf16>
  return %y : tensor<64x16x128xbf16>
}
}

// -----

// Heads of 32 stay standalone on sm_100a (sm_90a fuses them): its epilogue
// reads a row in 64-column chunks.
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @per_head_32(%x: tensor<64x64xbf16>, %w: tensor<256x64xbf16>) -> tensor<64x8x32xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [64, 8, 32] : tensor<64x256xbf16> into tensor<64x8x32xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: a group of 32 columns is not a multiple of 64 (the sm_100a epilogue's 64-column chunks of tensor memory)}}
  %y = fusion.rms_norm %e {epsilon = 1.0e-06 : f32} : tensor<64x8x32xbf16> -> tensor<64x8x32xbf16>
  return %y : tensor<64x8x32xbf16>
}
}
