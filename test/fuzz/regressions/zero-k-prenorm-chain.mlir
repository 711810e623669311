module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @block(%x: tensor<512x0xbf16>, %w: tensor<0x0xbf16>) -> tensor<512x0xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<512x0xbf16> -> tensor<512x0xbf16>
  %y = fusion.matmul %n, %w : tensor<512x0xbf16>, tensor<0x0xbf16> -> tensor<512x0xbf16>
  return %y : tensor<512x0xbf16>
}
func.func @chain(%x: tensor<512x0xbf16>, %w1: tensor<0x512xbf16>, %w2: tensor<512x0xbf16>) -> tensor<512x0xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<512x0xbf16> -> tensor<512x0xbf16>
  %h = fusion.matmul %n, %w1 : tensor<512x0xbf16>, tensor<0x512xbf16> -> tensor<512x512xbf16>
  %z = fusion.matmul %h, %w2 : tensor<512x512xbf16>, tensor<512x0xbf16> -> tensor<512x0xbf16>
  %y = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : tensor<512x0xbf16> -> tensor<512x0xbf16>
  return %y : tensor<512x0xbf16>
}
func.func @wide(%x: tensor<512x0xbf16>, %w: tensor<0x1024xbf16>) -> tensor<512x1024xbf16> {
  %h = fusion.matmul %x, %w : tensor<512x0xbf16>, tensor<0x1024xbf16> -> tensor<512x1024xbf16>
  %y = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<512x1024xbf16> -> tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
}
func.func @wider(%x: tensor<512x0xbf16>, %w: tensor<0x2048xbf16>) -> tensor<512x2048xbf16> {
  %h = fusion.matmul %x, %w : tensor<512x0xbf16>, tensor<0x2048xbf16> -> tensor<512x2048xbf16>
  %y = fusion.rms_norm %h {epsilon = 1.0e-05 : f32} : tensor<512x2048xbf16> -> tensor<512x2048xbf16>
  return %y : tensor<512x2048xbf16>
}
}
