// REQUIRES: ptxas
// Test that every standalone norm gradient of Inputs/gen_rows_grad_grid.py
// (RMSNorm and LayerNorm, with and without parameter gradients, bf16, f16
// and f32, with a residual of dy's type or f32, N from 256 to 8192, ragged
// rows included: 152 dx kernels and 136 partial-row sums) assembles for
// sm_90a without spilling under the register cap that RowSpec.cpp chooses
// from its estimate (the cap also sets the persistent grid, so a short
// estimate spills rather than failing).
// RUN: %python %S/Inputs/gen_rows_grad_grid.py > %t.mlir
// RUN: fusion-opt %t.mlir --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// CHECK-COUNT-288: ptxas ok: g_{{[a-z_0-9]+}}_kernel0{{(_params)?}} registers={{[0-9]+}} spills=0
// CHECK-NOT: ptxas ok
// CHECK-NOT: FAILED
//
// The same kernels with their rows staged through shared memory wherever
// that fits (norm-grad-stages=4: 103 of the 152 dx kernels; not the ragged
// rows of element accesses, nor f32 residuals, whose vectors are not 16
// bytes) assemble too; four of them (LayerNorm with both parameter
// gradients at 1024, 4096 and 8192, RMSNorm at 768) spill one 4-byte loop
// invariant, reloaded once a step.
// RUN: fusion-opt %t.mlir --fusion-plan-kernels --fusion-to-gpu="format=isa norm-grad-stages=4" > %t.staged.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.staged.isa.mlir | FileCheck %s --check-prefix=STAGED
// STAGED-COUNT-288: ptxas ok: g_{{[a-z_0-9]+}}_kernel0{{(_params)?}} registers={{[0-9]+}} spills={{0|4}}{{$}}
// STAGED-NOT: ptxas ok
// STAGED-NOT: FAILED
