// REQUIRES: ptxas
// Test that every kernel variant the sm_100a (tcgen05) generator emits (each
// tile_n x element-wise epilogue pieces x output type x B major, f16
// operands, and weight gradients with and without split-K; the rms_norm and
// layer_norm epilogues over a row one CTA holds, N = 64 .. 512 (past 256:
// one accumulator stage, two MMAs per k16), x output type, with a K-major
// B, with col_bias and a residual (written back into tensor memory), f16;
// and over a cluster of 2, 3, 4 and 16 CTAs (DSMEM), and through global
// memory (17, 24, 32 tiles of 512); the grad epilogues (rms_norm_grad,
// layer_norm_grad with dweight, dbias and a residual) over a row one CTA
// holds or a cluster shares; Lazy Pre-Norm over each tile_n, with and
// without element-wise pieces and norm epilogues, and the same cases with
// the LayerNorm prologue (row sums and squares, B's column sums as col_sum);
// Inputs/gen_variant_grid.py sm_100a: 207 GEMM kernels, 8 split-K sums and
// 19 parameter-gradient sums)
// goes through fusion-to-gpu and assembles with ptxas for sm_100a without
// spilling, and that no wgmma or setmaxnreg reaches an sm_100a module (the
// verifier rejects wgmma's fence/commit/wait there; the others are checked
// here). The kernels were never executed (no
// B200 here): this and the structural tests (fusion-to-gpu-sm100a.mlir,
// sass-sm100a.mlir) are what checks them.
// RUN: %python %S/Inputs/gen_variant_grid.py sm_100a > %t.mlir
// RUN: fusion-opt %t.mlir --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s
// The PTX is embedded MLIR-escaped (\09 is a tab):
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// CHECK-COUNT-234: ptxas ok: t_{{.*}}_kernel0{{(_splitk|_params)?}} registers={{[0-9]+}} spills=0
// CHECK-NOT: FAILED
// CHECK-NOT: spills={{[1-9]}}
// PTX-DAG: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// PTX-DAG: tcgen05.mma.cta_group::1.kind::f16
// PTX-DAG: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX-DAG: tcgen05.ld.sync.aligned.32x32b.x32.b32
// PTX-DAG: tcgen05.st.sync.aligned.32x32b.x32.b32
// PTX-DAG: tcgen05.wait::st.sync.aligned
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// PTX-DAG: barrier.cluster.wait.aligned
// PTX-DAG: atom.global.add.u32
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// RUN: not grep -E 'wgmma|setmaxnreg' %t.isa.mlir
