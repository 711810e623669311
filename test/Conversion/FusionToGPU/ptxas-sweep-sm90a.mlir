// REQUIRES: ptxas
// Test that every kernel variant the sm_90a generator emits (each single-CTA
// tile_n x prologue x epilogue x output type, and the bf16-output ones with a
// transposed B; Inputs/gen_variant_grid.py: 96 kernels) goes through
// fusion-to-gpu and assembles with ptxas for sm_90a without spilling, and that the PTX holds the instructions the design names.
// RUN: %python %S/Inputs/gen_variant_grid.py > %t.mlir
// RUN: fusion-opt %t.mlir --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// The PTX is embedded MLIR-escaped (\09 is a tab):
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// The same kernels byte for byte as recorded (ptx-golden-sm90a.mlir says why
// only on a GCC host):
// RUN: %if gcc-host %{ %python %S/Inputs/ptx_digest.py < %t.isa.mlir > %t.grid.digest %}
// RUN: %if gcc-host %{ diff %S/Inputs/ptx-golden/grid.digest %t.grid.digest %}
// RUN: %if gcc-host %{ grep -c _kernel0 %t.grid.digest | FileCheck --check-prefix=GRID %s %}
// GRID: {{^}}96{{$}}
// CHECK-COUNT-96: ptxas ok: v_n{{[0-9]+}}_{{.*}}_kernel0 registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED
// The LayerNorm prologue (Lazy Pre-Norm of a LayerNorm, B's column sums as
// col_sum), a grid of its own (gen_variant_grid.py ln_prologue: 42 kernels,
// tile_n up to 192) so that the 96 recorded kernels above stay as they are;
// the consumers add A's values as well as their squares (two FMAs' worth
// of the row sums per element), and the epilogue subtracts mean x col_sum
// with an FMA:
// RUN: %python %S/Inputs/gen_variant_grid.py ln_prologue > %t.ln.mlir
// RUN: fusion-opt %t.ln.mlir --fusion-to-gpu=format=isa > %t.ln.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.ln.isa.mlir | FileCheck %s --check-prefix=LN
// LN-COUNT-42: ptxas ok: ln_n{{[0-9]+}}_{{.*}}_kernel0 registers={{[0-9]+}} spills=0
// LN-NOT: FAILED
// LN-NOT: spills={{[1-9]}}
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// PTX-DAG: cp.async.bulk.commit_group
// PTX-DAG: cp.async.bulk.wait_group.read \091;
// PTX-DAG: fence.proxy.async.shared::cta
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 \0940;
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 \09232;
// PTX-DAG: mbarrier.try_wait.parity
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-DAG: wgmma.wait_group.sync.aligned \091;
// PTX-DAG: shfl.sync.bfly.b32
