module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f(%q: tensor<2x8x2x16xf32>, %k: tensor<2x4x2x16xf32>) {
  %dq, %dk, %dv = "fusion.gdpa_grad"(%q, %q, %k, %k, %q)
      <{activation = #fusion.activation<silu>, scale = 1.0 : f32,
        operandSegmentSizes = array<index: 1, 1, 1, 1, 0, 0, 1, 0, 0>}>
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>,
         tensor<2x8x2x16xf32>)
      -> (tensor<2x8x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>)
  return
}
}
// Found by the fuzzer (2026-12-07): a dense array of index elements, on
// which libMLIR 22's parser crashes. test/fuzz/regressions-diagnostics.test
// runs fusion-opt and fusion-runner on this file and checks their error
// against the line below, and that Debian's mlir-opt still crashes on it.
// GUARD-ARRAY: dense-array-index-elements.mlir:5:37: error: a dense array of index elements (array<index: ...>) is refused before parsing, because libMLIR 22's parser crashes on one (an upstream bug); dense arrays take integer or float elements, e.g. array<i64: 0, 1>
