// FlashNormAttention saving ln_q and h (fusion.norm_attention's two optional
// results, formed where a backward of unfused ops reads them:
// test/Pipelines/attention-block-train-sm90a.mlir): their tensor maps follow
// the statistics in the launch, and each consumer group TMA-stores ln_q from
// its rows after the LayerNorm (waiting for the read before P takes the
// rows) and h after O = P V, while the RMSNorm's row sums cross the
// cluster (waiting for the read before the output takes the rows): three
// bulk stores of D / 64 boxes per item. Jagged q (HSTU's layout), as the
// output: by TMA where the group's 64 rows are all the item's sequence's,
// else 16 bytes a thread into the flat tensors, which follow the maps in
// the launch. The dense kernel: 0 spills; the jagged one: the window and
// sequence loops' state, as without saving (attention-norm-jagged-sm90a.mlir:
// up to 48 bytes; 20 here, 40 without the saved results).
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir

// CHECK-LABEL: func.func @kunlun_saves(
// CHECK: call @fusionrtMaxActiveClusters
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_saves_kernel0 clusters in (%c2, %c1, %c1) {{.*}} threads in (%c384, %c1, %c1) {{.*}} args({{.*}} : memref<?x?xf32>, {{.*}} : memref<?x?xf32>, {{.*}} : memref<?x?xf32>, {{.*}} : !llvm.ptr, {{.*}} : !llvm.ptr)
// CHECK-LABEL: func.func @jagged_saves(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@jagged_saves_kernel0 clusters in (%c2, %c1, %c1) {{.*}} args({{.*}} : memref<?x?xf32>, {{.*}} : !llvm.ptr, {{.*}} : !llvm.ptr, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>)
// PTXAS-DAG: ptxas ok: kunlun_saves_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: jagged_saves_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-3][0-9]$|4[0-8]$}}
// The dense kernel's stores (the jagged kernel's follow in the same module):
// PTX: .entry kunlun_saves_kernel0
// PTX-COUNT-6: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX-NOT: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX: .entry jagged_saves_kernel0
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @kunlun_saves(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>,
                        %lnw: tensor<256xbf16>, %lnb: tensor<256xbf16>, %rmsw: tensor<256xbf16>)
    -> (tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) {
  %o, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %k, %v ln_weight(%lnw : tensor<256xbf16>) ln_bias(%lnb : tensor<256xbf16>) rms_weight(%rmsw : tensor<256xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
      -> tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
  return %o, %m, %r, %rr, %lnq, %h : tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
}

func.func @jagged_saves(%q: tensor<?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>,
                        %off: tensor<?xi32>, %lnw: tensor<256xbf16>, %lnb: tensor<256xbf16>, %rmsw: tensor<256xbf16>)
    -> (tensor<?x2x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>) {
  %o, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %k, %v offsets(%off : tensor<?xi32>) ln_weight(%lnw : tensor<256xbf16>) ln_bias(%lnb : tensor<256xbf16>) rms_weight(%rmsw : tensor<256xbf16>)
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
      -> tensor<?x2x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>
  return %o, %m, %r, %rr, %lnq, %h : tensor<?x2x128xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>
}
}
