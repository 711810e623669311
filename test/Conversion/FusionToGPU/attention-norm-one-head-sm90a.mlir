// FlashNormAttention of one head (H = 1): the unit's cluster is one CTA,
// so the norms' row statistics cross nothing. The LayerNorm's slice is the
// whole row (mean and rstd from the slice's own sums) and the RMSNorm's row
// sum is the quad's: no st.async into the CTA's own slots (outside the PTX
// model in a one-CTA cluster: compute-sanitizer's memcheck reported every
// such store), no mapa, and no exchange barrier armed or awaited; the only
// mbarrier waits are the ring's (full, the groups' Q, empty); the twelve
// exchange barriers are initialized and left alone.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir | FileCheck %s --check-prefix=PTX
// REQUIRES: ptxas

// CHECK-LABEL: func.func @one_head(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@one_head_kernel0 clusters in (%c1, %c1, %c1)
// CHECK-LABEL: gpu.func @one_head_kernel0(
// CHECK-NOT: nvvm.mapa
// CHECK-NOT: st.async
// CHECK-NOT: nvgpu.mbarrier.try_wait.parity {{.*}} num_barriers = 12>
// CHECK-NOT: nvgpu.mbarrier.arrive.expect_tx {{.*}} num_barriers = 12>
// CHECK: gpu.return
// PTXAS: ptxas ok: one_head_kernel0 registers={{[0-9]+}} spills=0
// PTX: .entry one_head_kernel0(
// PTX-NOT: st.async
// PTX-NOT: mapa
// PTX: ret;
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @one_head(%q: tensor<?x?x1x128xbf16>, %k: tensor<?x64x1x128xbf16>, %v: tensor<?x64x1x128xbf16>,
                    %lnw: tensor<128xbf16>, %lnb: tensor<128xbf16>, %rmsw: tensor<128xbf16>)
    -> (tensor<?x?x1x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<128xbf16>) ln_bias(%lnb : tensor<128xbf16>) rms_weight(%rmsw : tensor<128xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x1x128xbf16>, tensor<?x64x1x128xbf16>, tensor<?x64x1x128xbf16>
      -> tensor<?x?x1x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o, %m, %r, %rr : tensor<?x?x1x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
}
