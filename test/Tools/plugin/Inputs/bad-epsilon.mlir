func.func @bad(%x: tensor<64x128xbf16>) -> tensor<64x128xbf16> {
  %n = fusion.rms_norm %x {epsilon = -1.0 : f32} : tensor<64x128xbf16> -> tensor<64x128xbf16>
  return %n : tensor<64x128xbf16>
}
