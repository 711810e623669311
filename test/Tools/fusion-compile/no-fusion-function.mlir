// REQUIRES: ptxas, fusion-runtime
// Test that fusion-compile on a module without a function of fusion ops, or
// with a function the GPU lowering does not take beside fusion functions,
// ends in a clear error (never inside mlir-translate), and on one with a
// reserved name in the lowering's diagnostic.
// RUN: not fusion-compile %s -o %t.so 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not fusion-compile %S/Inputs/empty.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not fusion-compile %S/Inputs/mixed.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: not fusion-compile %S/Inputs/reserved.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=RESERVED
// NONE: fusion-compile: error: {{.*}}no-fusion-function.mlir holds no function with fusion ops to compile
// NONE-NOT: mlir-translate
// EMPTY: fusion-compile: error: {{.*}}empty.mlir holds no function with fusion ops to compile
// MIXED: error: 'func.func' op 'reference' holds no fusion op: convert-fusion-to-gpu turns every function of the module into a GPU host function made of fusion ops
// MIXED: fusion-compile: fusion-opt failed (exit 1)
// RESERVED: error: 'func.func' op has the reserved name 'free': the C library defines it
// RESERVED: fusion-compile: fusion-opt failed (exit 1)
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @reference(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %x, %y : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
}
