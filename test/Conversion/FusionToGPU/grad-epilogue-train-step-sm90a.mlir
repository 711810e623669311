// REQUIRES: ptxas
// The regrouped training steps of bench/layers/gen_layers.py (Linear ->
// RMSNorm with weight / LayerNorm with weight and bias -> Linear, forward
// and backward, M dynamic) at H = 256 (one CTA), 512, 768 and 1024
// (clusters of 2, 3 and 4 CTAs of 256 columns), and the residual blocks
// (train_step_res_*, y = fc2(norm(h)) + h: dy is the norm gradient's
// residual, added to dx by the grad epilogue) at 256 and 1024, compiled as
// `fusion-compile --regroup-backward` does: the norm gradient in the
// epilogue warps of the dgrad GEMM (epilogue_warps = true, 3 ring stages, no
// norm_input tile), its dgamma / dbeta partial rows summed by
// <kernel>_params. Every kernel assembles for sm_90a; none spills but the
// forward GEMM's one-CTA LayerNorm epilogue with save_norm_input at N = 256
// (kernel0 of the LayerNorm steps at H = 256: 184 bytes, the consumers'
// register epilogue, not this change; the unregrouped build has it too).
// This is the row exchange form (regroup-row-dot=false); the RMSNorm steps'
// default, the row dot, is in grad-epilogue-row-dot-sm90a.mlir.
// RUN: %python %S/Inputs/gen_train_steps.py > %t.mlir
// RUN: fusion-opt %t.mlir '--fusion-fuse=regroup-backward=true regroup-row-dot=false' --fusion-plan-kernels | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %t.mlir '--fusion-fuse=regroup-backward=true regroup-row-dot=false' '--fusion-to-gpu=format=isa' > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir > %t.ptxas.txt
// RUN: FileCheck %s --check-prefix=PTXAS < %t.ptxas.txt
// RUN: grep -v "ln_h256_kernel0 " %t.ptxas.txt | not grep -E "spills=[1-9]|FAILED"

// PLAN-LABEL: func.func @train_step_rms_h256
// PLAN: epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 216576, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_ln_h256
// PLAN: epilogue = #fusion.epilogue<layer_norm_grad>, {{.*}}fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 216576, epilogue_warps = true>
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
// The residual blocks: the skip gradient dy is the grad epilogue's residual.
// PLAN-LABEL: func.func @train_step_res_rms_h256(
// PLAN: fusion.fused_matmul %[[DY:.*]], %{{.*}} residual(%[[DY]] : tensor<?x256xbf16>) norm_weight
// PLAN-SAME: epilogue = #fusion.epilogue<rms_norm_grad>, fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 216576, epilogue_warps = true>
// PLAN-LABEL: func.func @train_step_res_ln_h1024(
// PLAN: fusion.fused_matmul %[[DY:.*]], %{{.*}} residual(%[[DY]] : tensor<?x1024xbf16>) norm_weight
// PLAN-SAME: epilogue = #fusion.epilogue<layer_norm_grad>, {{.*}}fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 4, consumers = 2, smem_bytes = 224768, epilogue_warps = true>

// The grad kernel (kernel3; in the residual blocks too, whose forward
// fc2 + h is fc2's residual, foldGemmResiduals) and its
// reduction of each step.
// PTXAS-DAG: ptxas ok: train_step_rms_h256_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_ln_h256_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_res_rms_h256_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_res_rms_h256_kernel3_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_res_ln_h256_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_res_rms_h1024_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_res_ln_h1024_kernel3 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: train_step_res_ln_h1024_kernel3_params registers={{[0-9]+}} spills=0
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
