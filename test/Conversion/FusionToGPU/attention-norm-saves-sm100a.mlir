// REQUIRES: ptxas
// FlashNormAttention saving ln_q and h on sm_100a (the tcgen05 kernel,
// AttentionTcgen05Norms.cpp; the sm_90a twin: attention-norm-saves-sm90a.mlir):
// the epilogue warpgroup's leader TMA-stores both 64-row halves of ln_q
// once every row holds it (their read awaited before P takes the rows), and
// of h, written rounded over the row's P after O, while the RMSNorm's row
// sums cross the cluster (their read awaited before the output takes the
// rows): 3 tensors x 2 halves x D / 64 boxes of bulk stores per item.
// Assembled, not executed (no B200).
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: grep -c 'cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group' %t.ptx | FileCheck %s --check-prefix=TWELVE
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx

// CHECK-LABEL: func.func @kunlun_saves(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_saves_kernel0 clusters in (%c2, %c1, %c1) {{.*}} threads in (%c256, %c1, %c1) {{.*}} args({{.*}} : memref<?x?xf32>, {{.*}} : memref<?x?xf32>, {{.*}} : memref<?x?xf32>, {{.*}} : !llvm.ptr, {{.*}} : !llvm.ptr)
// PTXAS: ptxas ok: kunlun_saves_kernel0 registers={{[0-9]+}} spills=0
// TWELVE: {{^}}12{{$}}
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @kunlun_saves(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>,
                        %lnw: tensor<256xbf16>, %lnb: tensor<256xbf16>, %rmsw: tensor<256xbf16>)
    -> (tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) {
  %o, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<256xbf16>) ln_bias(%lnb : tensor<256xbf16>) rms_weight(%rmsw : tensor<256xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
      -> tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
  return %o, %m, %r, %rr, %lnq, %h : tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
}
}
