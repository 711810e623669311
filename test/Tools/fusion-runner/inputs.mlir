// Tests the generated inputs: range, offset, rounding to the argument's
// element type, and determinism (same seed, same inputs; other seed, other
// inputs).

// RUN: fusion-runner %s -e identity --input-range=0,1 --input-offset=100 | FileCheck %s --check-prefix=OFFSET
// RUN: fusion-runner %s -e identity --input-range=-3,-3 | FileCheck %s --check-prefix=CONST
// RUN: fusion-runner %s -e identity_bf16 --input-range=1,1 --input-offset=0.001953125 --print-inputs | FileCheck %s --check-prefix=BF16
// RUN: fusion-runner %s -e identity --input-range=0.5,0.75 --print | FileCheck %s --check-prefix=RANGE

// RUN: fusion-runner %s -e identity --print --seed=7 > %t.seed7a
// RUN: fusion-runner %s -e identity --print --seed=7 > %t.seed7b
// RUN: fusion-runner %s -e identity --print --seed=8 > %t.seed8
// RUN: diff %t.seed7a %t.seed7b
// RUN: not diff %t.seed7a %t.seed8

// Arguments get independent streams: the two arguments of @two_args differ.
// RUN: fusion-runner %s -e two_args --print-inputs | FileCheck %s --check-prefix=TWO

// Uniform in [0, 1) plus 100 (the largest values round up to 101 in f32).
// OFFSET: result 0: tensor<32x32xf32>{{$}}
// OFFSET-NEXT: min=100{{[.0-9]*}} max={{10[01][.0-9]*}} mean=100.{{[0-9]+}}

// CONST: min=-3 max=-3 mean=-3

// 1 + 2^-9 is not a bf16: the input is rounded to 1 before the call.
// BF16: input 0: tensor<2xbf16> = [1, 1]
// BF16: result 0: tensor<2xbf16> = [1, 1]

// Every printed value is 0.5 <= v < 0.75.
// RANGE: result 0: tensor<32x32xf32> ={{$}}
// RANGE-NOT: {{[^0-9.]0\.[0-489]|[^0-9.]0\.7[5-9]|[1-9]\.}}
// RANGE: min=0.5{{[0-9]*}} max=0.7{{[0-4][0-9]*}} mean=0.6

// TWO: input 0: tensor<3xf32> = [[[A:.*]]]
// TWO-NOT: input 1: tensor<3xf32> = [[[A]]]
// TWO: input 1: tensor<3xf32> =
func.func @identity(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  return %x : tensor<32x32xf32>
}

func.func @identity_bf16(%x: tensor<2xbf16>) -> tensor<2xbf16> {
  return %x : tensor<2xbf16>
}

func.func @two_args(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %s = arith.addf %a, %b : tensor<3xf32>
  return %s : tensor<3xf32>
}
