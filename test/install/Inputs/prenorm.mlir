// The input of test/install/run.sh: a pre-norm that fusion-fuse turns into
// one fused GEMM (Lazy Pre-Norm).
func.func @prenorm(%x: tensor<?x128xbf16>, %w: tensor<128x256xbf16>) -> tensor<?x256xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %y = fusion.matmul %n, %w : tensor<?x128xbf16>, tensor<128x256xbf16> -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
// Not a lit test: test/install/run.sh checks that each installed tool fuses it.
