// REQUIRES: ptxas
// The regrouped training steps of bench/layers/gen_layers.py (Linear ->
// RMSNorm with weight / LayerNorm with weight and bias -> Linear, forward
// and backward, M dynamic) at H = 512, 768 and 1024 (clusters of 2, 3 and
// 4 CTAs of 256 columns), compiled as `fusion-compile --regroup-backward`
// does: the norm gradient in the epilogue warps of the dgrad GEMM
// (epilogue_warps = true, 3 ring stages, no norm_input tile), its dgamma /
// dbeta partial rows summed by <kernel>_params. Every kernel of the six
// steps assembles for sm_90a without spills.
// RUN: %python %S/Inputs/gen_train_steps.py > %t.mlir
// RUN: fusion-opt %t.mlir '--fusion-fuse=regroup-backward=true' --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %t.mlir '--fusion-fuse=regroup-backward=true' '--fusion-to-gpu=format=isa' > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir > %t.ptxas.txt
// RUN: FileCheck %s --check-prefix=PTXAS < %t.ptxas.txt
// RUN: not grep -E "spills=[1-9]|FAILED" %t.ptxas.txt

// PLAN-LABEL: func.func @train_step_rms_h512
// PLAN: epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 218624, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_ln_h512
// PLAN: epilogue = #fusion.epilogue<layer_norm_grad>, {{.*}}fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 220672, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_rms_h768
// PLAN: epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 3, consumers = 2, smem_bytes = 219648, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_ln_h768
// PLAN: epilogue = #fusion.epilogue<layer_norm_grad>, {{.*}}fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 3, consumers = 2, smem_bytes = 222720, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_rms_h1024
// PLAN: epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 4, consumers = 2, smem_bytes = 220672, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_ln_h1024
// PLAN: epilogue = #fusion.epilogue<layer_norm_grad>, {{.*}}fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 4, consumers = 2, smem_bytes = 224768, epilogue_warps = true>

// The grad kernel (kernel3) and its reduction of each step, then every
// kernel: 9 per step (two split-K sums), none spilled.
// PTXAS-DAG: ptxas ok: train_step_rms_h512_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h512_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h512_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h512_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h768_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h768_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h768_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h768_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h1024_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_rms_h1024_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h1024_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h1024_kernel3_params registers={{[0-9]+}} spills=0
