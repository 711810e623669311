// Forms the upstream-parser guard must let through: lists with negative,
// hexadecimal and extreme values, the generic form, comments, index
// elements on both sides, dense arrays of integers (and array<index: 1> in
// a comment), an alias of index used as a type.
!ix = index
func.func @f(%v: tensor<4xf32>, %e: tensor<4x8xf32>, %x: tensor<4x8xf32>, %t: tensor<8x4xf32>,
             %i: tensor<4x4xindex>, %j: tensor<4x4xindex>) -> (tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xindex>) {
  %b = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e : tensor<4x8xf32>) dimensions = [ 0x1 ] // dims
  %p = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>)
      permutation = [1,
                     0]
  %g = "linalg.transpose"(%x, %t) <{permutation = array<i64: 1, 0>}> ({
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = linalg.copy ins(%i : tensor<4x4xindex>) outs(%j : tensor<4x4xindex>) -> tensor<4x4xindex>
  %c = arith.constant 1.0 : f32
  %fe = tensor.from_elements %c, %c : tensor<2xf32>
  return %b, %p, %g, %m : tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xindex>
}
func.func @g(%k: !ix) -> !ix {
  return %k : !ix
}
// Not a lit test: test/fuzz/regressions-diagnostics.test checks that fusion-opt parses it.
