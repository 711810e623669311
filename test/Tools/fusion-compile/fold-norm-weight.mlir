// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile's fold of a training step's RMSNorm weight (on by
// default; --no-fold-norm-weight leaves it out) on the step as users write
// it (Linear -> RMSNorm with its weight -> Linear): folded, the first GEMM's
// norm epilogue writes x_hat and rstd only (no save_norm_input: h is not
// kept), W2 diag(g) is one row kernel more (eleven launches), and the
// weight gradient of W2 reads x_hat with g as its column scale, which its
// split-K sum kernel applies; unfolded, the epilogue also stores h (ten
// launches). Both libraries build and export the step.
// RUN: fusion-compile %s -o %t.so --keep-temps %t.fold && FileCheck %s --check-prefix=FOLD < %t.fold/host.mlir
// RUN: fusion-compile %s -o %t-no.so --no-fold-norm-weight --keep-temps %t.no && FileCheck %s --check-prefix=NOFOLD < %t.no/host.mlir
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=NM
// RUN: llvm-nm -D --defined-only %t-no.so | FileCheck %s --check-prefix=NM
// RUN: FileCheck %s --check-prefix=FOLD-ARGS < %t.fold/host.mlir
// RUN: fusion-opt %s --fusion-fuse | FileCheck %s --check-prefix=FUSED
// RUN: fusion-opt %s --fusion-fuse=fold-norm-weight=false | FileCheck %s --check-prefix=UNFOLDED
// RUN: FileCheck %s --check-prefix=NOFOLD-ARGS < %t.no/host.mlir
// What fusion-fuse makes of the step (what the launches below come from).
// Folded: the first GEMM's weightless norm epilogue returns x_hat and rstd
// only; W2 diag(g); the weight gradient of W2 reads x_hat with g as its
// column scale; the norm gradient reads x_hat.
// FUSED: %[[XH:.*]], %[[R:.*]] = fusion.fused_matmul %arg0, %arg1 {epilogue = #fusion.epilogue<rms_norm>
// FUSED-NOT: save_norm_input
// FUSED-SAME: -> tensor<?x256xbf16>, tensor<?xf32>
// FUSED: fusion.mul %arg3, %arg2 : tensor<256x256xbf16>, tensor<256xbf16>
// FUSED: fusion.fused_matmul %arg4, %[[XH]] col_scale(%arg2 : tensor<256xbf16>) {transpose_lhs}
// FUSED: fusion.rms_norm_grad %{{.*}}, %[[XH]], %[[R]] weight(%arg2 : tensor<256xbf16>) {normalized_input}
// Unfolded: the epilogue applies g and also stores h, which the gradient reads.
// UNFOLDED: %{{.*}}, %[[H:.*]], %[[R:.*]] = fusion.fused_matmul %arg0, %arg1 norm_weight(%arg2 : tensor<256xbf16>) {{{.*}}save_norm_input
// UNFOLDED-NOT: col_scale
// UNFOLDED: fusion.rms_norm_grad %{{.*}}, %[[H]], %[[R]] weight(%arg2 : tensor<256xbf16>) :
// FOLD-COUNT-11: gpu.launch_func
// FOLD-NOT: gpu.launch_func
// NOFOLD-COUNT-10: gpu.launch_func
// NOFOLD-NOT: gpu.launch_func
// NM: T step
// The launches' arguments (the function's: x %arg0-6, w1 %arg7-13, g
// %arg14-18, w2 %arg19-25, memref descriptors). Folded: the first GEMM does
// not read g (its norm is weightless); the row kernel after it multiplies
// w2 by g; the weight gradient's split-K sum reads g and N last.
// FOLD-ARGS: @fusion_kernels::@step_kernel0 clusters in {{.*}} args(
// FOLD-ARGS-NOT: %arg14
// FOLD-ARGS-SAME: ){{$}}
// FOLD-ARGS: @fusion_kernels::@step_kernel1 blocks in {{.*}} args(%arg19 : !llvm.ptr, %arg20 : !llvm.ptr, {{.*}}, %arg14 : !llvm.ptr, %arg15 : !llvm.ptr,
// FOLD-ARGS: @fusion_kernels::@step_kernel4_splitk {{.*}}, %arg14 : !llvm.ptr, %arg15 : !llvm.ptr, %arg16 : i64, %arg17 : i64, %arg18 : i64, %{{[0-9]+}} : i64){{$}}
// Unfolded: the first GEMM's norm epilogue reads g; the split-K sum takes
// no scale (its arguments end with the count and the ranges).
// NOFOLD-ARGS: @fusion_kernels::@step_kernel0 clusters in {{.*}}, %arg14 : !llvm.ptr, %arg15 : !llvm.ptr, %arg16 : i64, %arg17 : i64, %arg18 : i64,
// NOFOLD-ARGS: @fusion_kernels::@step_kernel1 clusters in
// NOFOLD-ARGS: @fusion_kernels::@step_kernel3_splitk {{.*}} : !llvm.ptr, %{{[0-9]+}} : i64, %{{[0-9]+}} : i64, %{{[0-9]+}} : i64, %{{[0-9]+}} : i64, %{{[0-9]+}} : i64){{$}}
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @step(%x: tensor<?x256xbf16>, %w1: tensor<256x256xbf16>, %g: tensor<256xbf16>, %w2: tensor<256x256xbf16>, %dy: tensor<?x256xbf16>)
    -> (tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<256x256xbf16>, tensor<256xf32>, tensor<256x256xbf16>) {
  %h = fusion.matmul %x, %w1 {transpose_rhs} : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %n, %rstd = fusion.rms_norm %h weight(%g : tensor<256xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?xf32>
  %y = fusion.matmul %n, %w2 {transpose_rhs} : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %dn = fusion.matmul %dy, %w2 : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %dw2 = fusion.matmul %dy, %n {transpose_lhs} : tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<256x256xbf16>
  %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<256xbf16>) : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xf32> -> tensor<?x256xbf16>, tensor<256xf32>
  %dx = fusion.matmul %dh, %w1 : tensor<?x256xbf16>, tensor<256x256xbf16> -> tensor<?x256xbf16>
  %dw1 = fusion.matmul %dh, %x {transpose_lhs} : tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<256x256xbf16>
  return %y, %dx, %dw1, %dg, %dw2 : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<256x256xbf16>, tensor<256xf32>, tensor<256x256xbf16>
}
}
