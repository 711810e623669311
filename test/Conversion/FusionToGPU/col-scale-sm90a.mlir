// REQUIRES: ptxas
// col_scale on sm_90a (fusion-fold-norm-weight's weight gradients,
// dy^T x_hat diag(g)): with split-K the GEMM kernel writes unscaled f32
// partial sums and <kernel>_splitk multiplies each sum by the scale of its
// column (at mod N) before the one rounding; without split-K the consumers'
// register epilogue multiplies the accumulator pairs by the scale pairs
// before the bias, for the tiles of a weight gradient and of a few tokens
// alike. All assemble without spills.
// RUN: fusion-opt %s -fusion-plan-kernels -convert-fusion-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fusion-opt %s "-fusion-to-gpu=format=isa" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: wgrad_split_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wgrad_split_kernel0_splitk registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wgrad_whole_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: decode_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

// Host: with split-K (1024 x 1024 from a dynamic token count) the scale
// goes to the sum kernel with N, not to the GEMM kernel; without it (2048 x
// 2048, 128 tiles) and for a few tokens it is the GEMM kernel's argument.
// CHECK-LABEL: func.func @wgrad_split
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wgrad_split_kernel0 {{.*}} : index, %{{.*}} : memref<?x?xf32>){{$}}
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wgrad_split_kernel0_splitk {{.*}} args(%{{.*}} : memref<?xf32>, %{{.*}} : memref<?xbf16>, %{{.*}} : index, %{{.*}} : index, %{{.*}} : memref<?xbf16>, %c1024 : index)
// CHECK-LABEL: func.func @wgrad_whole
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wgrad_whole_kernel0 {{.*}} : memref<?x?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : !llvm.ptr)
// CHECK-NOT: _splitk
// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@decode_kernel0 {{.*}} : memref<?x?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : !llvm.ptr)
// The sum kernel: the 4 sums of a thread times the scales at (i mod N).
// CHECK-LABEL: gpu.func @wgrad_split_kernel0_splitk
// CHECK: scf.for
// CHECK: arith.remui
// CHECK: vector.load %{{.*}} : memref<?xbf16>, vector<4xbf16>
// CHECK: arith.extf %{{.*}} : vector<4xbf16> to vector<4xf32>
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// The register epilogue: the scale pair multiplies before the bias pair adds.
// CHECK-LABEL: gpu.func @decode_kernel0
// CHECK: %[[SC:.*]] = arith.extf %{{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK: %[[B:.*]] = arith.extf %{{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %[[SC]] : vector<2xf32>
// CHECK: arith.addf %[[P]], %[[B]] : vector<2xf32>

module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @wgrad_split(%dy: tensor<?x1024xbf16>, %x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<1024x1024xbf16> {
  %dw = fusion.fused_matmul %dy, %x col_scale(%g : tensor<1024xbf16>) {transpose_lhs}
      : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<1024x1024xbf16>
  return %dw : tensor<1024x1024xbf16>
}

func.func @wgrad_whole(%dy: tensor<?x2048xbf16>, %x: tensor<?x2048xbf16>, %g: tensor<2048xf32>) -> tensor<2048x2048xbf16> {
  %dw = fusion.fused_matmul %dy, %x col_scale(%g : tensor<2048xf32>) {transpose_lhs}
      : tensor<?x2048xbf16>, tensor<?x2048xbf16> -> tensor<2048x2048xbf16>
  return %dw : tensor<2048x2048xbf16>
}

// A few tokens through nn.Linear with a scaled output and a bias.
func.func @decode(%x: tensor<4x1024xbf16>, %w: tensor<512x1024xbf16>, %s: tensor<512xbf16>, %b: tensor<512xbf16>) -> tensor<4x512xbf16> {
  %y = fusion.fused_matmul %x, %w col_bias(%b : tensor<512xbf16>) col_scale(%s : tensor<512xbf16>) {transpose_rhs}
      : tensor<4x1024xbf16>, tensor<512x1024xbf16> -> tensor<4x512xbf16>
  return %y : tensor<4x512xbf16>
}
}
