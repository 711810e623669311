// Crash freedom: malformed input a user can write ends in a diagnostic and a
// failing exit code (`not` also fails when the tool dies on a signal), never a
// crash. Every check rejects LLVM's crash banners and fatal-error prefix.
//
// RUN: split-file %s %t
// DEFINE: %{nocrash} = --implicit-check-not='PLEASE submit a bug report' --implicit-check-not='Stack dump' --implicit-check-not='LLVM ERROR'
// RUN: not fusion-opt %t/truncated-op.mlir 2>&1 | FileCheck %s --check-prefix=TRUNC-OP %{nocrash}
// RUN: not fusion-opt %t/truncated-attr.mlir 2>&1 | FileCheck %s --check-prefix=TRUNC-ATTR %{nocrash}
// RUN: not fusion-opt %t/truncated-target.mlir 2>&1 | FileCheck %s --check-prefix=TRUNC-TARGET %{nocrash}
// RUN: not fusion-opt %t/matmul-rank.mlir 2>&1 | FileCheck %s --check-prefix=MATMUL-RANK %{nocrash}
// RUN: not fusion-opt %t/norm-rank0.mlir 2>&1 | FileCheck %s --check-prefix=NORM-RANK0 %{nocrash}
// RUN: not fusion-opt %t/norm-grad-rank0.mlir 2>&1 | FileCheck %s --check-prefix=NORM-GRAD-RANK0 %{nocrash}
// RUN: not fusion-opt %t/gdpa-rank0.mlir 2>&1 | FileCheck %s --check-prefix=GDPA-RANK0 %{nocrash}
// RUN: not fusion-opt %t/unranked.mlir 2>&1 | FileCheck %s --check-prefix=UNRANKED %{nocrash}
// RUN: not fusion-opt %t/unknown-target.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-TARGET %{nocrash}
// RUN: not fusion-opt %t/generic-no-operands.mlir 2>&1 | FileCheck %s --check-prefix=NO-OPERANDS %{nocrash}
// RUN: not fusion-opt %t/generic-segments.mlir 2>&1 | FileCheck %s --check-prefix=SEGMENTS %{nocrash}
// RUN: not fusion-opt %t/generic-bad-enum.mlir 2>&1 | FileCheck %s --check-prefix=BAD-ENUM %{nocrash}

//--- truncated-op.mlir
// The op text stops after `->`: the result type is missing.
func.func @f(%x: tensor<4x8xf32>) {
  %y = fusion.rms_norm %x {epsilon = 0.5 : f32} : tensor<4x8xf32> ->
// TRUNC-OP: truncated-op.mlir:{{[0-9]+}}:{{[0-9]+}}: error: expected non-function type

//--- truncated-attr.mlir
// The file stops inside an activation attribute.
func.func @f(%q: tensor<1x8x2x4xf32>) {
  %o = fusion.gdpa %q, %q, %q {activation = #fusion.activation<
// TRUNC-ATTR: truncated-attr.mlir:{{[0-9]+}}:{{[0-9]+}}: error:

//--- truncated-target.mlir
// An unterminated chip string.
module attributes {fusion.target = #fusion.target<"sm_90a
// TRUNC-TARGET: truncated-target.mlir:{{[0-9]+}}:{{[0-9]+}}: error:

//--- matmul-rank.mlir
// A matmul of vectors.
func.func @f(%a: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<1xbf16> {
  %c = fusion.matmul %a, %b : tensor<8xbf16>, tensor<8xbf16> -> tensor<1xbf16>
  return %c : tensor<1xbf16>
}
// MATMUL-RANK: error: 'fusion.matmul' op expected lhs of rank 2, but got rank 1

//--- norm-rank0.mlir
// A norm of a scalar tensor, with a weight and a rank-0 rstd.
func.func @f(%x: tensor<f32>, %w: tensor<f32>) -> tensor<f32> {
  %y, %r = fusion.rms_norm %x weight(%w : tensor<f32>) {epsilon = 0.5 : f32}
      : tensor<f32> -> tensor<f32>, tensor<f32>
  return %y : tensor<f32>
}
// NORM-RANK0: error: 'fusion.rms_norm' op expected input of rank >= 1 (normalized over its innermost dimension), but got rank 0

//--- norm-grad-rank0.mlir
// A layer_norm gradient of scalar tensors, with parameter gradients.
func.func @f(%x: tensor<bf16>, %s: tensor<f32>) {
  %dx, %dw, %db = fusion.layer_norm_grad %x, %x, %s, %s weight(%x : tensor<bf16>) {with_bias_grad}
      : tensor<bf16>, tensor<bf16>, tensor<f32>, tensor<f32> -> tensor<bf16>, tensor<f32>, tensor<f32>
  return
}
// NORM-GRAD-RANK0: error: 'fusion.layer_norm_grad' op expected input of rank >= 1 (normalized over its innermost dimension), but got rank 0

//--- gdpa-rank0.mlir
// Jagged attention on scalar tensors.
func.func @f(%x: tensor<f32>, %off: tensor<i32>) {
  %o = fusion.gdpa %x, %x, %x offsets(%off : tensor<i32>)
      {activation = #fusion.activation<relu>, scale = 1.0 : f32}
      : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>
  return
}
// GDPA-RANK0: error: 'fusion.gdpa' op expected query of rank 3 ([T, H, D] with offsets), but got rank 0

//--- unranked.mlir
// Unranked tensors are not accepted.
func.func @f(%x: tensor<*xf32>) {
  %y = fusion.rms_norm %x {epsilon = 0.5 : f32} : tensor<*xf32> -> tensor<*xf32>
  return
}
// UNRANKED: error: {{.*}}expected builtin.tensor, but found 'tensor<*xf32>'

//--- unknown-target.mlir
// sm_101a no longer exists (it became sm_110a in CUDA 13).
module attributes {fusion.target = #fusion.target<"sm_101a">} {
}
// UNKNOWN-TARGET: error: unknown target chip 'sm_101a', expected one of: sm_90a, sm_100a

//--- generic-no-operands.mlir
// Generic form with no operands at all.
func.func @f() {
  %y = "fusion.rms_norm"() {epsilon = 0.5 : f32} : () -> tensor<4x8xf32>
  return
}
// NO-OPERANDS: error: 'fusion.rms_norm' op expected 1 or more operands, but found 0

//--- generic-segments.mlir
// Generic form whose operandSegmentSizes do not add up to the operands.
func.func @f(%a: tensor<4x8xf32>) {
  %y = "fusion.fused_matmul"(%a, %a) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>}>
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}
// SEGMENTS: error: 'fusion.fused_matmul' op operand count (2) does not match with the total size (3) specified in attribute 'operandSegmentSizes'

//--- generic-bad-enum.mlir
// Generic form with an integer where the epilogue kind belongs.
func.func @f(%a: tensor<4x8xf32>) {
  %y = "fusion.fused_matmul"(%a, %a) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, epilogue = 7 : i32}>
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}
// BAD-ENUM: error: invalid properties {{.*}} for op fusion.fused_matmul: Invalid attribute `epilogue` in property conversion: 7 : i32
