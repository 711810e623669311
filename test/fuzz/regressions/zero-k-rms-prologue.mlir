module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @two(%x: tensor<256x0xbf16>, %w1: tensor<0x256xbf16>, %w2: tensor<256x0xbf16>) -> tensor<256x0xbf16> {
  %h = fusion.fused_matmul %x, %w1 {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32}
      : tensor<256x0xbf16>, tensor<0x256xbf16> -> tensor<256x256xbf16>
  %y = fusion.fused_matmul %h, %w2 {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x256xbf16>, tensor<256x0xbf16> -> tensor<256x0xbf16>
  return %y : tensor<256x0xbf16>
}
}
