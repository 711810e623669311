// What fusion-plan-kernels{report=true} says of the sm_100a (tcgen05)
// attention kernels: the tensor-memory columns S and O take (with the
// norms also the row's q and ln_q, as 16-bit pairs) of the 512, the roles
// (a producer thread, an MMA warp, an epilogue warpgroup of a row per
// thread), the stages and shared memory (16 bytes more than sm_90a's: the
// tensor-memory address slot).
// RUN: fusion-opt %s -split-input-file "--fusion-plan-kernels=report=true" -verify-diagnostics -o /dev/null

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @gdpa(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @below {{attention kernel on sm_100a: work items of 128 query tokens (tcgen05: S and O in 256 of 512 tensor-memory columns, a producer thread, an MMA warp and an epilogue warpgroup of a row per thread) over (batch, head, token tile); keys and values whole in shared memory (L_kv 128 padded to 128); 2 stages of Q, K, V: 230416 bytes of shared memory of 232448; a persistent grid of min(items, SMs) CTAs}}
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @flash(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  // expected-remark @below {{attention kernel on sm_100a: work items of 128 query tokens (tcgen05: S and O, q and ln_q in 384 of 512 tensor-memory columns, a producer thread, an MMA warp and an epilogue warpgroup of a row per thread) over (batch, token tile), each taken by a cluster of 2 CTAs, one per head (the norms' row sums through DSMEM); keys and values whole in shared memory (L_kv 128 padded to 128); 2 stages of Q, K, V: 205328 bytes of shared memory of 232448; a persistent grid of min(items, co-resident clusters) clusters}}
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o, %m, %r, %rr : tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
}
