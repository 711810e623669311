// A transformer-style block, y = layer_norm(rms_norm(x) @ W1 @ W2 + x), in
// bf16, written twice:
//   @block_unfused  as separate norm, matmul and add ops (what a frontend emits);
//   @block_fused    as the fused ops the fusion passes produce: the RMSNorm rides
//                   in the first GEMM (Lazy Pre-Norm prologue), the residual and
//                   the LayerNorm in the second GEMM's epilogue.
// scripts/quickstart.sh shows what fusion-fuse makes of @block_unfused, runs
// it before and after fusion and both forms on the CPU on the same random
// inputs, and compiles the fused block into an sm_90a shared library.

module attributes {fusion.target = #fusion.target<"sm_90a">} {

func.func @block_unfused(%x: tensor<64x128xbf16>, %w1: tensor<128x256xbf16>,
                         %w2: tensor<256x128xbf16>) -> tensor<64x128xbf16> {
  %n, %rstd = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
      : tensor<64x128xbf16> -> tensor<64x128xbf16>, tensor<64xf32>
  %h = fusion.matmul %n, %w1
      : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  %z = fusion.matmul %h, %w2
      : tensor<64x256xbf16>, tensor<256x128xbf16> -> tensor<64x128xbf16>
  %s = fusion.add %z, %x : tensor<64x128xbf16>
  %y, %mean, %r = fusion.layer_norm %s {epsilon = 1.0e-05 : f32}
      : tensor<64x128xbf16> -> tensor<64x128xbf16>, tensor<64xf32>, tensor<64xf32>
  return %y : tensor<64x128xbf16>
}

func.func @block_fused(%x: tensor<64x128xbf16>, %w1: tensor<128x256xbf16>,
                       %w2: tensor<256x128xbf16>) -> tensor<64x128xbf16> {
  %h = fusion.fused_matmul %x, %w1
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  %y = fusion.fused_matmul %h, %w2 residual(%x : tensor<64x128xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<64x256xbf16>, tensor<256x128xbf16> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}
}
