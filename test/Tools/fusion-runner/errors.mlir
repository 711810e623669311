// Tests that every bad input gets a clear message and exit code 1.

// RUN: not fusion-runner %s -e nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: no function @nope; the module defines @unlowerable, @ok, @ok_f16, @int_arg, @dyn_arg, @not_tensor, @f64_arg, @one_result
// RUN: not fusion-runner %s -e ok --compare=nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN-CMP
// UNKNOWN-CMP: error: no function @nope; the module defines
// RUN: not fusion-runner %s -e decl 2>&1 | FileCheck %s --check-prefix=DECL
// DECL: error: @decl is a declaration without a body
// RUN: not fusion-runner %s -e table 2>&1 | FileCheck %s --check-prefix=NOT-FUNC
// NOT-FUNC: error: @table is a 'memref.global' op, but a func.func is expected

// RUN: not fusion-runner %s -e ok --compare=ok_f16 2>&1 | FileCheck %s --check-prefix=SIG-TYPE
// SIG-TYPE: error: signature mismatch: argument 1 of @ok is tensor<4xf32>, but argument 1 of @ok_f16 is tensor<4xf16>
// RUN: not fusion-runner %s -e ok --compare=one_result 2>&1 | FileCheck %s --check-prefix=SIG-COUNT
// SIG-COUNT: error: signature mismatch: @ok has 2 results, but @one_result has 1
// RUN: not fusion-runner %s -e ok --against=%S/Inputs/against-other.mlir --compare=gelu_bf16 2>&1 | FileCheck %s --check-prefix=SIG-OTHER
// SIG-OTHER: error: signature mismatch: @ok has 2 arguments, but @gelu_bf16 in {{.*}}against-other.mlir has 1

// RUN: not fusion-runner %s -e int_arg 2>&1 | FileCheck %s --check-prefix=INT
// INT: error: argument 1 of @int_arg has integer type tensor<4xi32>; fusion-runner only generates bf16/f16/f32 inputs: make integer operands constants inside the function (arith.constant dense<...>)
// RUN: not fusion-runner %s -e dyn_arg 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: error: argument 0 of @dyn_arg has dynamic shape tensor<?x4xf32>; fusion-runner needs static shapes
// RUN: not fusion-runner %s -e not_tensor 2>&1 | FileCheck %s --check-prefix=SCALAR
// SCALAR: error: argument 0 of @not_tensor has type f32, but fusion-runner only supports ranked tensors
// RUN: not fusion-runner %s -e f64_arg 2>&1 | FileCheck %s --check-prefix=F64
// F64: error: argument 0 of @f64_arg has type tensor<2xf64>; fusion-runner generates inputs of element type bf16, f16 or f32 only

// RUN: not fusion-runner %s 2>&1 | FileCheck %s --check-prefix=NO-ENTRY
// NO-ENTRY: error: missing -e <function>: name the function to run
// RUN: not fusion-runner -e ok 2>&1 | FileCheck %s --check-prefix=NO-INPUT
// NO-INPUT: error: no input file
// RUN: not fusion-runner %s.missing -e ok 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: cannot open input file '{{.*}}errors.mlir.missing': {{.*}}
// RUN: not fusion-runner %s -e ok --against=%s.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not fusion-runner %S/Inputs/parse-error.mlir -e ok 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: parse-error.mlir:4:{{[0-9]+}}: error:
// PARSE: error: cannot parse '{{.*}}parse-error.mlir'

// RUN: not fusion-runner %s -e ok --no-such-option 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// BAD-OPTION: Unknown command line argument '--no-such-option'
// RUN: not fusion-runner %s -e ok --input-range=1 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not fusion-runner %s -e ok --input-range=2,1 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not fusion-runner %s -e ok --input-range=a,b 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: invalid --input-range='{{.*}}': expected 'lo,hi' with finite numbers lo <= hi
// RUN: not fusion-runner %s -e ok --input-offset=x 2>&1 | FileCheck %s --check-prefix=OFFSET
// OFFSET: error: invalid --input-offset='x': expected a finite number
// RUN: not fusion-runner %s -e ok --compare=ok --atol=-1 2>&1 | FileCheck %s --check-prefix=ATOL
// ATOL: error: invalid --atol='-1': expected a finite number >= 0
// RUN: not fusion-runner %s -e ok --compare=ok --rtol=nan 2>&1 | FileCheck %s --check-prefix=RTOL
// RTOL: error: invalid --rtol='nan': expected a finite number >= 0
// RUN: not fusion-runner %s -e ok --opt-level=7 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: expected --opt-level between 0 and 3, but got 7
// RUN: not fusion-runner %s -e ok --against=%s --after-passes=cse 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: --against and --after-passes cannot be combined

// RUN: not fusion-runner %s -e ok --after-passes=no-such-pass 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: invalid --after-passes pipeline 'builtin.module(no-such-pass)': {{.*}}no-such-pass
// RUN: not fusion-runner %s -e ok --after-passes='func.func(' 2>&1 | FileCheck %s --check-prefix=PIPELINE-SYNTAX
// PIPELINE-SYNTAX: error: invalid --after-passes pipeline 'builtin.module(func.func()'
// RUN: not fusion-runner %s -e ok --after-passes='symbol-privatize,symbol-dce' 2>&1 | FileCheck %s --check-prefix=GONE
// GONE: error: no function @ok after passes; the module defines no function with a body

// An op without a CPU lowering is reported with its location.
// RUN: not fusion-runner %s -e unlowerable 2>&1 | FileCheck %s --check-prefix=LOWER
// LOWER: errors.mlir:[[@LINE+4]]:3: error: ops with unknown memory side effects are not supported
// LOWER: note: see current operation: "gpu.barrier"
// LOWER: error: lowering to the LLVM dialect failed
func.func private @unlowerable(%a: tensor<4xf32>) -> tensor<4xf32> {
  gpu.barrier
  return %a : tensor<4xf32>
}

func.func @ok(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = arith.addf %a, %b : tensor<4xf32>
  return %s, %a : tensor<4xf32>, tensor<4xf32>
}

func.func @ok_f16(%a: tensor<4xf32>, %b: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}

func.func @int_arg(%a: tensor<4xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

func.func @dyn_arg(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %a : tensor<?x4xf32>
}

func.func @not_tensor(%a: f32) -> f32 {
  return %a : f32
}

func.func @f64_arg(%a: tensor<2xf64>) -> tensor<2xf64> {
  return %a : tensor<2xf64>
}

func.func @one_result(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

func.func private @decl(tensor<4xf32>) -> tensor<4xf32>

memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
