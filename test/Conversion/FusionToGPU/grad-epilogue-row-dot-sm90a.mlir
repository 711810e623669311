// REQUIRES: ptxas
// The regrouped training steps of bench/layers/gen_layers.py (Linear ->
// RMSNorm with weight / LayerNorm with weight and bias -> Linear, forward and
// backward, M dynamic) with the norm gradient's row sums taken from the next
// layer's output (row_dot, the default of fusion-fuse{regroup-backward=true}):
// <dh_i, z_i - beta> = <dy_i, y_i - beta W2^T> and <dh_i, w> = <dy_i, w W2^T>,
// row dots over the dgrad GEMM's K that its consumers compute from A's tiles
// and y's in the main loop (LayerNorm's vectors beta W2^T and w W2^T: 1-row
// GEMMs, rounded to bf16 like y, whose 64 columns of each K step come by TMA
// into 128-byte slots of the stage). The epilogue is the consumers' (one CTA, any N: no
// cluster, no exchange), also at H = 4096, which the row exchange form does
// not regroup. The residual blocks (whose fc2 GEMM stores y + h, not y) keep
// the exchange form (grad-epilogue-train-step-sm90a.mlir).
// RUN: %python %S/Inputs/gen_train_steps.py 256 1000 1024 4096 > %t.mlir
// RUN: fusion-opt %t.mlir '--fusion-fuse=regroup-backward=true' --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %t.mlir '--fusion-fuse=regroup-backward=true' '--fusion-to-gpu=format=isa' > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir > %t.ptxas.txt
// RUN: FileCheck %s --check-prefix=PTXAS < %t.ptxas.txt
// RUN: grep -v "ln_h256_kernel0 " %t.ptxas.txt | not grep -E "spills=[1-9]|FAILED"
// RUN: fusion-opt %s '--fusion-fuse=regroup-backward=true' '--fusion-to-gpu=format=isa' > %t.bias.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.bias.mlir | FileCheck %s --check-prefix=BIAS
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.bias.mlir | FileCheck %s --check-prefix=BIAS-PTXAS

// The next layer's bias b2 as the shift (the module below: an RMSNorm with
// its weight, then nn.Linear with its bias, and the step's backward): one
// vector, 65664 bytes a K step.
// BIAS-LABEL: .entry rms_step_next_bias_kernel2(
// BIAS-COUNT-6: prefetch.tensormap
// BIAS-NOT: prefetch.tensormap
// BIAS: mov.b32 [[B:%r[0-9]+]], 65664;
// BIAS-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[B]];
// BIAS: cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// BIAS-NOT: cp.async.bulk.tensor.1d
// BIAS-LABEL: .entry rms_step_next_bias_kernel2_params(
// BIAS-PTXAS: ptxas ok: rms_step_next_bias_kernel2 registers={{[0-9]+}} spills=0

// The dgrad GEMM dy @ W2 reads y, the forward's fc2 output, as its row_dot:
// three ring stages of A, B and y's tile (16 + 32 + 16 KB; a tile's
// norm_input takes one more slot), no epilogue warps, no cluster, whatever H.
// PLAN-LABEL: func.func @train_step_rms_h256
// PLAN: %[[Y:.*]] = fusion.fused_matmul %{{.*}}, %[[W2:[^ ]*]] {fusion.kernel = {{.*}}, transpose_rhs}
// PLAN: fusion.fused_matmul %{{.*}}, %[[W2]] norm_weight({{.*}}) norm_input({{.*}}) rstd({{.*}}) row_dot(%[[Y]] : tensor<?x256xbf16>) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912>}
// PLAN-LABEL: func.func @train_step_ln_h256
// PLAN-SAME: %{{[^:]*}}: tensor<?x256xbf16>, %{{[^:]*}}: tensor<256x256xbf16>, %[[GAMMA:[^:]*]]: tensor<256xbf16>, %[[BETA:[^:]*]]: tensor<256xbf16>, %[[W2:[^:]*]]: tensor<256x256xbf16>
// PLAN: %[[Y:.*]] = fusion.fused_matmul %{{.*}}, %[[W2]] {fusion.kernel = {{.*}}, transpose_rhs}
// PLAN: %[[BR:.*]] = tensor.expand_shape %[[BETA]]
// PLAN: %[[U:.*]] = fusion.fused_matmul %[[BR]], %[[W2]] {{.*}} -> tensor<1x256xbf16>
// PLAN: %[[US:.*]] = tensor.collapse_shape %[[U]]
// PLAN: %[[GR:.*]] = tensor.expand_shape %[[GAMMA]]
// PLAN: %[[V:.*]] = fusion.fused_matmul %[[GR]], %[[W2]] {{.*}} -> tensor<1x256xbf16>
// PLAN: %[[VS:.*]] = tensor.collapse_shape %[[V]]
// PLAN: row_dot(%[[Y]] : tensor<?x256xbf16>) row_dot_shift(%[[US]] : tensor<256xbf16>) row_dot_sum(%[[VS]] : tensor<256xbf16>) {epilogue = #fusion.epilogue<layer_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 232192>, with_bias_grad}
// PLAN-LABEL: func.func @train_step_rms_h1024
// PLAN: row_dot({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912>}
// PLAN-LABEL: func.func @train_step_rms_h4096
// PLAN: row_dot({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 230912>}
// PLAN-NOT: fusion.rms_norm_grad
// PLAN-LABEL: func.func @train_step_ln_h4096
// PLAN: row_dot_sum({{.*}}) {epilogue = #fusion.epilogue<layer_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 232192>, with_bias_grad}
// PLAN-NOT: fusion.layer_norm_grad
// PLAN-LABEL: func.func @train_step_res_rms_h256
// PLAN-NOT: row_dot
// PLAN: epilogue = #fusion.epilogue<rms_norm_grad>, {{.*}}epilogue_warps = true>

// The row-dot grad kernel (kernel3) at H = 4096: the tensor maps of A, B,
// the output, y and norm_input prefetched; after a tile's K steps the
// producer loads the tile's norm_input into the next ring slot (four
// [128, 64] boxes, 65536 bytes), which the consumers read in the epilogue;
// each K step's barrier expects A's, B's and y's bytes (65536) and y's tile
// lands 48 KB into the stage, at A's coordinates; no DSMEM exchange.
// PTX-LABEL: .entry train_step_rms_h4096_kernel3(
// PTX-COUNT-5: prefetch.tensormap
// PTX: mov.b32 [[XBYTES:%r[0-9]+]], 65536;
// PTX-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[XBYTES]];
// PTX-COUNT-4: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: mov.b32 [[BYTES:%r[0-9]+]], 65536;
// PTX-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[BYTES]];
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[A:%rd[0-9]+]], {[[K:%r[0-9]+]], [[ROW:%r[0-9]+]]}]
// PTX: add.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 49152;
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {[[K]], [[ROW]]}]
// PTX-NOT: st.async
// PTX-NOT: mapa
// PTX-LABEL: .entry train_step_rms_h4096_kernel3_params(

// The LayerNorm kernel (kernel5) at H = 1024: seven tensor maps; a K step
// expects A, B, y and the two vectors' 64 columns (65792 bytes), the vectors
// by 1-D TMA at the K step's column.
// PTX-LABEL: .entry train_step_ln_h4096_kernel5(
// PTX-COUNT-7: prefetch.tensormap
// PTX-NOT: prefetch.tensormap
// PTX: mov.b32 [[B:%r[0-9]+]], 65792;
// PTX-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[B]];
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {[[K:%r[0-9]+]], {{%r[0-9]+}}}]
// PTX: cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {[[K]]}]
// PTX-NEXT: add.s64
// PTX-NEXT: cvta.shared.u64
// PTX-NEXT: cvta.to.shared::cluster.u64
// PTX-NEXT: cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {[[K]]}]
// PTX-NOT: st.async
// PTX-NOT: mapa
// PTX-LABEL: .entry train_step_ln_h4096_kernel5_params(

// PTXAS-DAG: ptxas ok: train_step_rms_h256_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h1000_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h1000_kernel5 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h1024_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h4096_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h4096_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h256_kernel5 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h1024_kernel5 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h4096_kernel5 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h4096_kernel5_params registers={{[0-9]+}} spills=0

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
