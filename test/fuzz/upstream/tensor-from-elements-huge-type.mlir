func.func @f(%a: f32, %b: f32) -> tensor<4294967296xf32> {
  %t = tensor.from_elements %a, %b : tensor<4294967296xf32>
  return %t : tensor<4294967296xf32>
}
