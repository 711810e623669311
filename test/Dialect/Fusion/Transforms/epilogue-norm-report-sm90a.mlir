// RUN: fusion-opt %s -split-input-file -fusion-epilogue-norm=report=true -verify-diagnostics -o /dev/null
// Test that the cost model picks one CTA, a portable cluster or a non-portable
// cluster on sm_90a (256-column accumulator slices, clusters up to 16), and
// says why it refuses the rest.

// N = 256 fits one CTA.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @single(%a: tensor<64x64xbf16>, %b: tensor<64x256xbf16>) -> tensor<64x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x256xbf16> -> tensor<64x256xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: one CTA holds the whole row (N = 256)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
}

// -----

// N = 2048 needs 8 CTAs, more than the 4 whose clusters the H200's GPCs hold
// on 120 SMs: the statistics go through global memory instead.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster8(%a: tensor<64x64xbf16>, %b: tensor<64x2048xbf16>, %r: tensor<64x2048xbf16>) -> tensor<64x2048xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x2048xbf16> -> tensor<64x2048xbf16>
  %s = fusion.add %c, %r : tensor<64x2048xbf16>
  // expected-remark @below {{fusion.layer_norm fused into the epilogue of a fusion.fused_matmul with its residual: CTAs of 256 columns each, exchanging partial statistics through global memory (each tile waits in shared memory until its row block's statistics are complete)}}
  %y, %m, %rs = fusion.layer_norm %s {epsilon = 1.0e-05 : f32} : tensor<64x2048xbf16> -> tensor<64x2048xbf16>, tensor<64xf32>, tensor<64xf32>
  return %y : tensor<64x2048xbf16>
}
}

// -----

// N = 3000 needs 12 CTAs: through global memory, 256 columns each (the last
// tile holds 184).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @uneven(%a: tensor<64x64xbf16>, %b: tensor<64x3000xbf16>) -> tensor<64x3000xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x3000xbf16> -> tensor<64x3000xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: CTAs of 256 columns each, exchanging partial statistics through global memory (each tile waits in shared memory until its row block's statistics are complete)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x3000xbf16> -> tensor<64x3000xbf16>
  return %y : tensor<64x3000xbf16>
}
}

// -----

// N = 576 needs 3 slices, rounded up to 4 of ceil(576 / 4) = 144 columns,
// rounded up to 192: 3 CTAs already hold the row, so the fourth is dropped.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @trimmed(%a: tensor<64x64xbf16>, %b: tensor<64x576xbf16>) -> tensor<64x576xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x576xbf16> -> tensor<64x576xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: a cluster of 3 CTAs along N, 192 columns each, exchanging partial sums through DSMEM}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x576xbf16> -> tensor<64x576xbf16>
  return %y : tensor<64x576xbf16>
}
}

// -----

// N = 200 fits one CTA, in a tile rounded up to 256 columns (tile_n is a
// multiple of 64 on sm_90a).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @single_partial(%a: tensor<64x64xbf16>, %b: tensor<64x200xbf16>) -> tensor<64x200xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x200xbf16> -> tensor<64x200xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: one CTA holds the whole row (N = 200 in a tile of 256 columns)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x200xbf16> -> tensor<64x200xbf16>
  return %y : tensor<64x200xbf16>
}
}

// -----

// N = 4096 with a 16-bit output: through global memory.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster16(%a: tensor<64x64xbf16>, %b: tensor<64x4096xbf16>) -> tensor<64x4096xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x4096xbf16> -> tensor<64x4096xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: CTAs of 256 columns each, exchanging partial statistics through global memory (each tile waits in shared memory until its row block's statistics are complete)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x4096xbf16> -> tensor<64x4096xbf16>
  return %y : tensor<64x4096xbf16>
}
}

// -----

// N = 8192 needs 32 CTAs, more than a row may span.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @too_wide(%a: tensor<64x64xbf16>, %b: tensor<64x8192xbf16>) -> tensor<64x8192xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x8192xbf16> -> tensor<64x8192xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: N = 8192 needs 32 CTAs of at most 256 columns, more than the 16 a row may span on sm_90a}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x8192xbf16> -> tensor<64x8192xbf16>
  return %y : tensor<64x8192xbf16>
}
}

// -----

// A dynamic N cannot be planned.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @dynamic(%a: tensor<64x64xbf16>, %b: tensor<64x?xbf16>) -> tensor<64x?xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x?xbf16> -> tensor<64x?xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: the normalized dimension N is dynamic; the epilogue's cluster shape needs a static N}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x?xbf16> -> tensor<64x?xbf16>
  return %y : tensor<64x?xbf16>
}
}

// -----

// No target, no decision.
func.func @no_target(%a: tensor<64x64xbf16>, %b: tensor<64x256xbf16>) -> tensor<64x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x256xbf16> -> tensor<64x256xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: the module has no fusion.target (the row limits depend on it)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}

// -----

// The reasons the producer does not qualify.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @producers(%x: tensor<64x256xf32>, %a: tensor<64x64xf32>, %b: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>) {
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input is not produced by a fusion.matmul (or a fusion.add of one)}}
  %y0 = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  %xx = fusion.add %x, %x : tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input is a fusion.add of no fusion.matmul result}}
  %y1 = fusion.rms_norm %xx {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  %c = fusion.matmul %a, %b : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %c2 = fusion.matmul %a, %b : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %s2 = fusion.add %c2, %x : tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: the GEMM result has users besides the residual add, which read it without the residual, and would be stored anyway}}
  %y2 = fusion.rms_norm %s2 {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y0, %y1, %y2, %c2 : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>
}
}

// -----

// A norm input that has other users is fused anyway, and stored for them
// beside the output (save_norm_input): a GEMM result, and a residual sum.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @saved_input(%x: tensor<64x256xf32>, %a: tensor<64x64xf32>, %b: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul, also storing its input (the GEMM result) for its 2 other users (save_norm_input): one CTA holds the whole row (N = 256)}}
  %y0 = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  %d = fusion.add %c, %x : tensor<64x256xf32>
  %c2 = fusion.matmul %a, %b : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %s2 = fusion.add %c2, %x : tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul with its residual, also storing its input (the residual sum) for its 1 other user (save_norm_input): one CTA holds the whole row (N = 256)}}
  %y1 = fusion.rms_norm %s2 {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y0, %y1, %c, %d, %s2 : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>
}
}

// -----

// The saved input's user comes before the norm, and the norm's weight is
// defined after that user: the fused op can go neither at the norm nor
// right after the GEMM.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @saved_input_unplaceable(%a: tensor<64x64xf32>, %b: tensor<64x256xf32>, %v: tensor<256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %p = fusion.mul %c, %c : tensor<64x256xf32>
  %w = fusion.add %v, %v : tensor<256xf32>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input has other users before it, and the fused op cannot move above them (its operands are defined later)}}
  %y = fusion.rms_norm %c weight(%w : tensor<256xf32>) {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y, %p : tensor<64x256xf32>, tensor<64x256xf32>
}
}

// -----

// A transposed left operand.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @transposed(%a: tensor<64x64xf32>, %b: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %c = fusion.matmul %a, %b {transpose_lhs} : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: the producing fusion.matmul transposes its left operand}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
}

// -----

// A 3-D norm input is no GEMM output.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rank3(%x: tensor<2x64x256xf32>) -> tensor<2x64x256xf32> {
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input has rank 3; a GEMM output is 2-D}}
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<2x64x256xf32> -> tensor<2x64x256xf32>
  return %y : tensor<2x64x256xf32>
}
}

// -----

// N = 1024 takes a portable cluster of 4.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster4(%a: tensor<64x64xbf16>, %b: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
  %c = fusion.matmul %a, %b : tensor<64x64xbf16>, tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: a cluster of 4 CTAs along N, 256 columns each, exchanging partial sums through DSMEM}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x1024xbf16> -> tensor<64x1024xbf16>
  return %y : tensor<64x1024xbf16>
}
}

// -----

// N = 4096 with an f32 output: the global-memory exchange keeps 16-bit tiles
// in shared memory, so f32 rows take the largest (non-portable) cluster, 16.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @cluster16_f32(%a: tensor<64x64xf32>, %b: tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  %c = fusion.matmul %a, %b : tensor<64x64xf32>, tensor<64x4096xf32> -> tensor<64x4096xf32>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul: a cluster of 16 CTAs along N, 256 columns each, exchanging partial sums through DSMEM (non-portable cluster size)}}
  %y = fusion.rms_norm %c {epsilon = 1.0e-05 : f32} : tensor<64x4096xf32> -> tensor<64x4096xf32>
  return %y : tensor<64x4096xf32>
}
}

// -----

// A linear's bias rides along as col_bias, before the residual.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @linear_bias(%x: tensor<64x64xbf16>, %w: tensor<256x64xbf16>, %b: tensor<256xbf16>, %r: tensor<64x256xbf16>) -> tensor<64x256xbf16> {
  %h = fusion.matmul %x, %w bias(%b : tensor<256xbf16>) {transpose_rhs} : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xbf16>
  %s = fusion.add %h, %r : tensor<64x256xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul with the matmul's bias as col_bias and its residual: one CTA holds the whole row (N = 256)}}
  %y = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
}

// -----

// A bias added separately is not a residual when this pass runs alone.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @bias_add(%x: tensor<64x64xbf16>, %w: tensor<256x64xbf16>, %b: tensor<256xbf16>) -> tensor<64x256xbf16> {
  %h = fusion.matmul %x, %w {transpose_rhs} : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xbf16>
  %s = fusion.add %h, %b : tensor<64x256xbf16>, tensor<256xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input is a fusion.add of no fusion.matmul result and a residual of the sum's type}}
  %y = fusion.rms_norm %s {epsilon = 1.0e-05 : f32} : tensor<64x256xbf16> -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
}

// -----

// A per-head norm (Qwen3's q_norm): the GEMM's columns unfolded into heads
// of 128, each normalized on its own in the GEMM's epilogue.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @per_head(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %g: tensor<128xbf16>) -> tensor<?x16x128xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x2048xbf16>
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 16, 128] : tensor<?x2048xbf16> into tensor<?x16x128xbf16>
  // expected-remark @below {{fusion.rms_norm fused into the epilogue of a fusion.fused_matmul over groups of 128 columns (norm_group_size): each CTA normalizes whole groups of 128 columns (N = 2048 as 16 groups, tiles of 256 columns), no exchange}}
  %y = fusion.rms_norm %e weight(%g : tensor<128xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x16x128xbf16> -> tensor<?x16x128xbf16>
  return %y : tensor<?x16x128xbf16>
}
}

// -----

// Heads of 4 columns: the accumulator's column groups are 8 wide.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @per_head_narrow(%x: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x16x4xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [64, 16, 4] : tensor<64x64xbf16> into tensor<64x16x4xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: a group of 4 columns is not a multiple of 8 (the accumulator fragment's column groups)}}
  %y = fusion.rms_norm %e {epsilon = 1.0e-06 : f32} : tensor<64x16x4xbf16> -> tensor<64x16x4xbf16>
  return %y : tensor<64x16x4xbf16>
}
}

// -----

// Heads of 80 columns: no tile of 64, 128, 192 or 256 columns holds whole heads.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @per_head_80(%x: tensor<64x64xbf16>, %w: tensor<320x64xbf16>) -> tensor<64x4x80xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<64x64xbf16>, tensor<320x64xbf16> -> tensor<64x320xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [64, 4, 80] : tensor<64x320xbf16> into tensor<64x4x80xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: no tile of a multiple of 64 columns up to 256 holds whole groups of 80 columns}}
  %y = fusion.rms_norm %e {epsilon = 1.0e-06 : f32} : tensor<64x4x80xbf16> -> tensor<64x4x80xbf16>
  return %y : tensor<64x4x80xbf16>
}
}

// -----

// A view that also splits the rows is not the heads view of a GEMM's columns.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @per_head_rows_split(%x: tensor<64x64xbf16>, %w: tensor<256x64xbf16>) -> tensor<2x32x2x128xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xbf16>
  %e = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [2, 32, 2, 128] : tensor<64x256xbf16> into tensor<2x32x2x128xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input is a tensor.expand_shape other than [M, N] -> [M, N / G, G] (the heads view of a per-head norm)}}
  %y = fusion.rms_norm %e {epsilon = 1.0e-06 : f32} : tensor<2x32x2x128xbf16> -> tensor<2x32x2x128xbf16>
  return %y : tensor<2x32x2x128xbf16>
}
}

// -----

// Heads whose size is known only at run time: the plan needs a static group.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @per_head_dynamic(%x: tensor<64x64xbf16>, %w: tensor<?x64xbf16>, %h: index, %d: index) -> tensor<64x?x?xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<64x64xbf16>, tensor<?x64xbf16> -> tensor<64x?xbf16>
  %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [64, %h, %d] : tensor<64x?xbf16> into tensor<64x?x?xbf16>
  // expected-remark @below {{fusion.rms_norm not fused into a GEMM epilogue: its input's groups (the heads view's innermost dimension) have a dynamic size}}
  %y = fusion.rms_norm %e {epsilon = 1.0e-06 : f32} : tensor<64x?x?xbf16> -> tensor<64x?x?xbf16>
  return %y : tensor<64x?x?xbf16>
}
}
