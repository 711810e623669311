// REQUIRES: ptxas
// Test that every attention kernel variant (Inputs/gen_attention_grid.py:
// fusion.gdpa over D, Dv = 64..256, key lengths 1..256, every activation,
// bf16 and f16, two stages or one; fusion.norm_attention over 1-4 heads,
// D = 64 and 128, with and without the norms' parameters) goes through
// fusion-to-gpu and assembles with ptxas for sm_90a: the gdpa kernels
// without spilling, the FlashNormAttention ones within 64 bytes (q and ln_q
// of the thread's positions in registers beside both accumulators; 0 today,
// ln_q being S = ln_q K^T's A there); then
// fusion.gdpa_grad (the backward) over D, Dv of 64 and 128, key lengths 1
// to 128, every activation, bf16 and f16: within 24 bytes (dK and dV stay
// in registers beside S^T and dP^T: at D = Dv = 128, 192 of the consumers'
// 240; K's and V's MMA descriptors are rebuilt per tile from an opaque zero,
// which LLVM cannot hoist out of the tile loop: they spilled 152-160 bytes
// at D = Dv = 128 when hoisted; 0-12 today, P^T and dS^T being dV's and
// dK's A in registers: grad_0 0 -> 8, grad_2 16 -> 12, grad_7 20 -> 0);
// then fusion.norm_attention with jagged q (i32 and i64 offsets, 1-4
// heads, D = 64 and 128): within the dense FlashNormAttention's 64 bytes (0 today), the
// window kernels without spilling; last, the backward with a residual
// added to dq (rgrad_<i>: grad_<i>'s cases, then six jagged ones, the
// residual do itself or its own operand): dense within 32 bytes (0-24),
// jagged within 100 (0-100: rgrad_10 went 76 -> 88 when the MMAs began
// fresh accumulators by scale-d zero, 88 -> 100 with P^T and dS^T in
// registers (the residual do; a residual of its own keeps them in shared
// memory, jagged); jagged q without a residual spills 12-96 on these
// cases); and
// fusion.gdpa with a residual (res_<i>: dense and jagged, the query or
// another tensor, Dv up to 256): without spilling.
// RUN: %python %S/Inputs/gen_attention_grid.py > %t.mlir
// RUN: fusion-opt %t.mlir --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// CHECK-DAG: ptxas ok: gdpa_0_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_1_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_2_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_3_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_4_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_5_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_6_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_7_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_8_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_9_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_10_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: gdpa_11_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: flash_0_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_1_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_2_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_3_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_4_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_5_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_6_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: flash_7_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: grad_0_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_1_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_2_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_3_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_4_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_5_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_6_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_7_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_8_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: grad_9_kernel0 registers={{[0-9]+}} spills={{[0-9]$|1[0-9]$|2[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_0_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_0_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: jflash_1_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_1_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: jflash_2_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_2_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: jflash_3_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_3_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: jflash_4_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_4_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: jflash_5_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_5_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: jflash_6_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-5][0-9]$|6[0-4]$}}
// CHECK-DAG: ptxas ok: jflash_6_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: rgrad_0_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_1_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_2_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_3_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_4_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_5_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_6_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_7_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_8_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_9_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-2][0-9]$|3[0-2]$}}
// CHECK-DAG: ptxas ok: rgrad_10_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-9][0-9]$|100$}}
// CHECK-DAG: ptxas ok: rgrad_11_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-9][0-9]$|100$}}
// CHECK-DAG: ptxas ok: rgrad_12_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-9][0-9]$|100$}}
// CHECK-DAG: ptxas ok: rgrad_13_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-9][0-9]$|100$}}
// CHECK-DAG: ptxas ok: rgrad_14_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-9][0-9]$|100$}}
// CHECK-DAG: ptxas ok: rgrad_15_kernel0 registers={{[0-9]+}} spills={{[0-9]$|[1-9][0-9]$|100$}}
// CHECK-DAG: ptxas ok: res_0_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_1_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_2_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_3_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_4_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_5_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_6_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_7_kernel0 registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_2_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_4_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_5_kernel0_windows registers={{[0-9]+}} spills=0
// CHECK-DAG: ptxas ok: res_7_kernel0_windows registers={{[0-9]+}} spills=0

// Every MMA shape the grid needs: S of 64 x L_kv (padded) and O of 64 x Dv.
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
