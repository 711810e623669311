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
// Not a lit test: test/fuzz/regressions-diagnostics.test checks that fusion-opt refuses it
// (GUARD-ARRAY) and that Debian's mlir-opt still crashes on it. Found by the
// fuzzer (2026-12-07): a dense array of index elements.
