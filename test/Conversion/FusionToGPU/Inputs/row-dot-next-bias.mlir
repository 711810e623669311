// The row dot with the next layer's bias as its shift (one [K] vector by TMA):
// the input of grad-epilogue-row-dot-sm90a.mlir's BIAS checks.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_step_next_bias(%h: tensor<?x1024xbf16>, %g: tensor<1024xbf16>, %w2: tensor<1024x1024xbf16>, %b2: tensor<1024xbf16>, %dy: tensor<?x1024xbf16>)
    -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<1024xf32>) {
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w2 bias(%b2 : tensor<1024xbf16>) {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>) : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %y, %dh, %dg : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<1024xf32>
}
}
