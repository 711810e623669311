// Test that fusion-compile --cpu builds a CPU library with the GPU
// libraries' ABI and descriptions, without a GPU, a driver or the runtime:
// a Llama-style pre-norm (RMSNorm with its weight, then nn.Linear with a
// bias), fused by fusion-fuse, runs with a token count chosen at call time
// and matches the formula in float64.
// RUN: fusion-compile --cpu %s -o %t.so
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// RUN: llvm-readelf -d %t.so | FileCheck %s --check-prefix=NEEDED
// RUN: %python %S/Inputs/run_cpu.py %t.so | FileCheck %s --check-prefix=EXEC
// RUN: fusion-compile --cpu --no-fuse %s -o %t-unfused.so
// RUN: %python %S/Inputs/run_cpu.py %t-unfused.so | FileCheck %s --check-prefix=EXEC
// RUN: not fusion-compile --cpu %S/Inputs/reserved.mlir -o %t-bad.so 2>&1 | FileCheck %s --check-prefix=BAD
// CHECK-DAG: T prenorm
// CHECK-DAG: R __fusion_signature_prenorm
// CHECK-NOT: {{ (malloc|free|memcpy|main)$}}
// NEEDED-NOT: fusion_runtime
// NEEDED-NOT: libcuda
// EXEC-NOT: error
// EXEC: prenorm: M=5 max relative error ok
// BAD: error: 'func.func' op has the reserved name
// BAD: fusion-compile: fusion-opt failed
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @prenorm(%x: tensor<?x16xf32>, %g: tensor<16xf32>, %w: tensor<24x16xf32>,
                   %b: tensor<24xf32>) -> (tensor<?x24xf32>, tensor<?xf32>) {
  %n, %rstd = fusion.rms_norm %x weight(%g : tensor<16xf32>) {epsilon = 1.0e-05 : f32}
      : tensor<?x16xf32> -> tensor<?x16xf32>, tensor<?xf32>
  %y = fusion.matmul %n, %w bias(%b : tensor<24xf32>) {transpose_rhs}
      : tensor<?x16xf32>, tensor<24x16xf32> -> tensor<?x24xf32>
  return %y, %rstd : tensor<?x24xf32>, tensor<?xf32>
}
}
