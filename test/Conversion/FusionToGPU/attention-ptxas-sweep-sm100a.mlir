// REQUIRES: ptxas
// Test that every sm_100a (tcgen05) attention kernel variant
// (Inputs/gen_attention_grid.py sm_100a: fusion.gdpa over D, Dv = 64..256,
// key lengths 1..256, every activation, bf16 and f16, two stages or one,
// the grid the sm_90a sweep assembles; and jagged fusion.gdpa with i32 and
// i64 offsets over D, Dv and key lengths; fusion.norm_attention over 1-4
// heads (clusters), D = 64 and 128, with and without the norms' parameters,
// the sm_90a sweep's cases; fusion.gdpa_grad, the sm_90a sweep's 10 backward
// cases (D, Dv of 64 and 128, key lengths 1..128, every activation, bf16
// and f16) and 6 jagged ones (i32 and i64 offsets); fusion.norm_attention
// with jagged q, 7 cases (1-4 heads, D = 64 and 128, i32 and i64 offsets); fusion.gdpa_grad
// with a residual added to dq, 16 cases (the dense and jagged backward
// cases, the residual do itself or its own operand); fusion.gdpa with a
// residual, 8 cases (dense and jagged, the query or another tensor, Dv up
// to 256: 146-216 registers)) goes through
// fusion-to-gpu and
// assembles with ptxas for sm_100a without spilling, and that no wgmma or
// setmaxnreg reaches the module. Never executed (no B200 here): this and
// attention-sm100a.mlir / attention-sass-sm100a.mlir are what checks them.
// RUN: %python %S/Inputs/gen_attention_grid.py sm_100a > %t.mlir
// RUN: fusion-opt %t.mlir --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir > %t.ptxas
// RUN: FileCheck %s < %t.ptxas
// RUN: FileCheck %s --check-prefix=OTHERS < %t.ptxas
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not grep -E 'wgmma|setmaxnreg' %t.ptx
// CHECK-NOT: FAILED
// CHECK-NOT: spills={{[1-9]}}
// CHECK-COUNT-12: ptxas ok: gdpa_{{[0-9]+}}_kernel0 registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED
// CHECK-NOT: spills={{[1-9]}}
// OTHERS-DAG: ptxas ok: jagged_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jagged_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jagged_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jagged_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jagged_0_kernel0_windows registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_4_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_5_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_6_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: flash_7_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_4_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_5_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_6_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_7_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_8_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: grad_9_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jgrad_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jgrad_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jgrad_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jgrad_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jgrad_4_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jgrad_5_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_4_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_5_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: jflash_6_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_4_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_5_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_6_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_7_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_8_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_9_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_10_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_11_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_12_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_13_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_14_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: rgrad_15_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_0_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_1_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_2_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_3_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_4_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_5_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_6_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_7_kernel0 registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_2_kernel0_windows registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_4_kernel0_windows registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_5_kernel0_windows registers={{[0-9]+}} spills=0
// OTHERS-DAG: ptxas ok: res_7_kernel0_windows registers={{[0-9]+}} spills=0
// PTX-DAG: .target sm_100a
// PTX-DAG: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// PTX-DAG: tcgen05.mma.cta_group::1.kind::f16
// PTX-DAG: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX-DAG: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX-DAG: tcgen05.ld.sync.aligned.32x32b.x16.b32
// PTX-DAG: tcgen05.dealloc.cta_group::1.sync.aligned.b32
// PTX-DAG: tcgen05.st.sync.aligned.32x32b.x32.b32
// PTX-DAG: tcgen05.wait::st.sync.aligned
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
