// REQUIRES: ptxas
// The row-dot grad epilogue on sm_100a (assembled and structurally checked,
// never executed: no B200): the regrouped training steps of
// grad-epilogue-row-dot-sm90a.mlir built for sm_100a. The Lazy row-sum warps
// (2-3) take the row dots from A's and y's tiles in each stage (and
// LayerNorm's second sum with the vectors' slots), hand the sums to the
// epilogue warpgroup through shared memory with tmemFull, as Lazy Pre-Norm's;
// the epilogue skips the first pass and the exchange (one CTA, any N) and
// reads norm_input from global memory, a row per thread, as the exchange
// form does.
// RUN: %python %S/Inputs/gen_train_steps.py 1000 1024 4096 > %t.mlir
// RUN: fusion-opt %t.mlir '--fusion-set-target=chip=sm_100a' '--fusion-fuse=regroup-backward=true' --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %t.mlir '--fusion-set-target=chip=sm_100a' '--fusion-fuse=regroup-backward=true' '--fusion-to-gpu=format=isa' > %t.isa.mlir
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir | FileCheck %s --check-prefix=PTX
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir > %t.ptxas.txt
// RUN: FileCheck %s --check-prefix=PTXAS < %t.ptxas.txt
// RUN: not grep -E "spills=[1-9]|FAILED" %t.ptxas.txt

// One epilogue warpgroup (consumers = 1), no cluster, whatever H.
// PLAN-LABEL: func.func @train_step_rms_h1000
// PLAN: row_dot({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 1, smem_bytes = 230912>}
// PLAN-LABEL: func.func @train_step_ln_h1024
// PLAN: row_dot({{.*}}) row_dot_shift({{.*}}) row_dot_sum({{.*}}) {epilogue = #fusion.epilogue<layer_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 1, smem_bytes = 232192>, with_bias_grad}
// PLAN-LABEL: func.func @train_step_rms_h4096
// PLAN: row_dot({{.*}}) {epilogue = #fusion.epilogue<rms_norm_grad>
// PLAN-NOT: fusion.rms_norm_grad

// The LayerNorm step's grad kernel at H = 1024: A, B, the output, y and
// the two vectors' maps prefetched; a K step expects A, B, y and the
// vectors' 64 columns (65792 bytes), the vectors by 1-D TMA; tcgen05 MMAs;
// no DSMEM.
// PTX-LABEL: .entry train_step_ln_h1024_kernel5(
// PTX-COUNT-6: prefetch.tensormap
// PTX-NOT: prefetch.tensormap
// PTX: mov.b32 [[B:%r[0-9]+]], 65792;
// PTX-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[B]];
// PTX-COUNT-2: cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: tcgen05.mma
// PTX-NOT: st.async
// PTX-NOT: mapa
// PTX-LABEL: .entry train_step_ln_h1024_kernel5_params(

// The RMSNorm step's grad kernel at H = 4096 (16 column tiles, one CTA
// each, no cluster): A, B, the output and y prefetched; a K step expects A,
// B and y (65536 bytes), y's tile by TMA at A's coordinates (the same rows
// and K columns); no vectors, no DSMEM, no cluster barrier.
// PTX-LABEL: .entry train_step_rms_h4096_kernel3(
// PTX-COUNT-4: prefetch.tensormap
// PTX-NOT: prefetch.tensormap
// PTX: mov.b32 [[T:%r[0-9]+]], 65536;
// PTX-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[T]];
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], {{\[}}[[AMAP:%rd[0-9]+]], {[[KCOL:%r[0-9]+]], [[MROW:%r[0-9]+]]}]
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], {{\[}}{{%rd[0-9]+}}, {[[KCOL]], [[MROW]]}]
// PTX-NOT: cp.async.bulk.tensor.1d
// PTX: tcgen05.mma
// PTX-NOT: mapa
// PTX-NOT: st.async
// PTX-NOT: barrier.cluster
// PTX-LABEL: .entry train_step_rms_h4096_kernel3_params(

// PTXAS-DAG: ptxas ok: train_step_rms_h1000_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h1000_kernel5 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h1024_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h1024_kernel5 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h4096_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h4096_kernel5 registers={{[0-9]+}} spills=0
