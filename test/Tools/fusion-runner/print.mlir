// Tests the output of a plain run: functions without arguments whose results
// are computed by hand, bf16/f16 rounding, math ops, and the multi-line format.

// RUN: fusion-runner %s -e matmul_const | FileCheck %s --check-prefix=MATMUL
// RUN: fusion-runner %s -e bf16_round | FileCheck %s --check-prefix=BF16
// RUN: fusion-runner %s -e f16_math | FileCheck %s --check-prefix=MATH
// RUN: fusion-runner %s -e scalar_and_int | FileCheck %s --check-prefix=SCALAR
// RUN: fusion-runner %s -e big | FileCheck %s --check-prefix=SUMMARY
// RUN: fusion-runner %s -e big --print | FileCheck %s --check-prefix=BIG

// [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
// MATMUL: result 0: tensor<2x2xf32> = {{\[\[}}19, 22], [43, 50]]
// MATMUL-NEXT: min=19 max=50 mean=33.5
// MATMUL-NOT: result 1
func.func @matmul_const() -> tensor<2x2xf32> {
  %a = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = arith.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<0.0> : tensor<2x2xf32>
  %c = linalg.matmul ins(%a, %b : tensor<2x2xf32>, tensor<2x2xf32>)
                     outs(%z : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %c : tensor<2x2xf32>
}

// f32 -> bf16 rounds to nearest even (8 significant bits): 1 + 2^-9 -> 1,
// 1 + 1.5 * 2^-7 (a tie) -> 1 + 2^-6, 3 stays 3; printed with %g.
// BF16: result 0: tensor<3xbf16> = [1, 1.01562, 3]
// BF16-NEXT: min=1 max=3 mean=1.67188
func.func @bf16_round() -> tensor<3xbf16> {
  %x = arith.constant dense<[1.001953125, 1.01171875, 3.0]> : tensor<3xf32>
  %y = arith.truncf %x : tensor<3xf32> to tensor<3xbf16>
  return %y : tensor<3xbf16>
}

// math on f16, rounded to f16: erf(1) = 0.842701 -> 0.842773,
// tanh(4) = 0.999329 -> 0.999512, exp(4) = 54.5982 -> 54.5938.
// MATH: result 0: tensor<2xf16> = [0.842773, 1]
// MATH-NEXT: min=0.842773 max=1 mean=0.921387
// MATH: result 1: tensor<2xf16> = [0.761719, 0.999512]
// MATH: result 2: tensor<2xf16> = [2.71875, 54.5938]
// MATH: result 3: tensor<2xf16> = [1, 0.5]
func.func @f16_math() -> (tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) {
  %x = arith.constant dense<[1.0, 4.0]> : tensor<2xf16>
  %erf = math.erf %x : tensor<2xf16>
  %tanh = math.tanh %x : tensor<2xf16>
  %exp = math.exp %x : tensor<2xf16>
  %rsqrt = math.rsqrt %x : tensor<2xf16>
  return %erf, %tanh, %exp, %rsqrt : tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>
}

// A 0-d result and an integer result (converted to f32).
// SCALAR: result 0: tensor<f32> = 6
// SCALAR-NEXT: min=6 max=6 mean=6
// SCALAR: result 1: tensor<2xi32> = [-3, 7]
func.func @scalar_and_int() -> (tensor<f32>, tensor<2xi32>) {
  %x = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %init = arith.constant dense<0.0> : tensor<f32>
  %sum = linalg.reduce ins(%x : tensor<3xf32>) outs(%init : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %i = arith.constant dense<[-3, 7]> : tensor<2xi32>
  return %sum, %i : tensor<f32>, tensor<2xi32>
}

// More than 64 elements: only the summary, unless --print is given; then one
// innermost row per line. The values are 0, 1, ..., 99 (row-major).
// SUMMARY: result 0: tensor<2x50xf32>{{$}}
// SUMMARY-NEXT: min=0 max=99 mean=49.5
// BIG: result 0: tensor<2x50xf32> ={{$}}
// BIG-NEXT: {{^}}{{\[\[}}0, 1, 2, {{.*}}, 48, 49],{{$}}
// BIG-NEXT: {{^}} [50, 51, {{.*}}, 98, 99]]{{$}}
// BIG-NEXT: min=0 max=99 mean=49.5
#id = affine_map<(i, j) -> (i, j)>
func.func @big() -> tensor<2x50xf32> {
  %e = tensor.empty() : tensor<2x50xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<2x50xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c50 = arith.constant 50 : index
    %row = arith.muli %i, %c50 : index
    %k = arith.addi %row, %j : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    linalg.yield %kf : f32
  } -> tensor<2x50xf32>
  return %r : tensor<2x50xf32>
}
