module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f(%a: tensor<4611686018427387904x64xbf16>, %b: tensor<64x1099511627776xbf16>) -> tensor<4611686018427387904x1099511627776xbf16> {
  %c = fusion.matmul %a, %b : tensor<4611686018427387904x64xbf16>, tensor<64x1099511627776xbf16> -> tensor<4611686018427387904x1099511627776xbf16>
  return %c : tensor<4611686018427387904x1099511627776xbf16>
}
func.func @g(%x: tensor<1099511627776x1024xbf16>, %w: tensor<1024xbf16>) -> tensor<1099511627776x1024xbf16> {
  %y = fusion.rms_norm %x weight(%w : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<1099511627776x1024xbf16> -> tensor<1099511627776x1024xbf16>
  return %y : tensor<1099511627776x1024xbf16>
}
}
