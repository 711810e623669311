module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f(%q: tensor<2x8x2x64xf32>) -> tensor<2x8x128xf32> {
  %qf = tensor.collapse_shape %q [[1099511627776], [1], [2, 3]] : tensor<2x8x2x64xf32> into tensor<2x8x128xf32>
  %y = fusion.rms_norm %qf {epsilon = 1.0e-05 : f32} : tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  return %y : tensor<2x8x128xf32>
}
}
// A fuzzer reproducer, not a lit test: test/fuzz/regressions-diagnostics.test checks its
// diagnostic (RESHAPE) through fusion-runner, fusion-to-cpu and fusion-to-gpu.
