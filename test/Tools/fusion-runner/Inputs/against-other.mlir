// The other side of against.mlir.

#id = affine_map<(i, j) -> (i, j)>

// Same as @gelu in against.mlir, as one linalg.generic.
func.func @gelu(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.707106781 : f32
    %s = arith.mulf %in, %rsqrt2 : f32
    %erf = math.erf %s : f32
    %p = arith.addf %one, %erf : f32
    %hx = arith.mulf %half, %in : f32
    %y = arith.mulf %hx, %p : f32
    linalg.yield %y : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
func.func @gelu_tanh(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %c = arith.constant 0.044715 : f32
    %k = arith.constant 0.797884561 : f32
    %x2 = arith.mulf %in, %in : f32
    %x3 = arith.mulf %x2, %in : f32
    %cx3 = arith.mulf %c, %x3 : f32
    %u = arith.addf %in, %cx3 : f32
    %ku = arith.mulf %k, %u : f32
    %t = math.tanh %ku : f32
    %p = arith.addf %one, %t : f32
    %hx = arith.mulf %half, %in : f32
    %y = arith.mulf %hx, %p : f32
    linalg.yield %y : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// Wrong signature for @gelu (used by errors.mlir).
func.func @gelu_bf16(%x: tensor<16x16xbf16>) -> tensor<16x16xbf16> {
  return %x : tensor<16x16xbf16>
}
