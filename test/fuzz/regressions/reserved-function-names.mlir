module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @mgpuLaunchKernel(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  %c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>
  return %c : tensor<128x128xbf16>
}
func.func @malloc(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  %c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>
  return %c : tensor<128x128xbf16>
}
}
