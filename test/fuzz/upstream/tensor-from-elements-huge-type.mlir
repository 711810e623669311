func.func @f(%a: f32, %b: f32) -> tensor<4294967296xf32> {
  %t = tensor.from_elements %a, %b : tensor<4294967296xf32>
  return %t : tensor<4294967296xf32>
}
// Not a lit test: test/fuzz/regressions-diagnostics.test checks that fusion-opt refuses it
// (GUARD-ELEMENTS) and that Debian's mlir-opt still aborts on it.
