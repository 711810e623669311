// REQUIRES: ptxas
// col_scale on sm_100a: the tensor-memory epilogue multiplies each 8-column
// group by its scales before the bias (addColumnPieces); with split-K the
// sum kernel scales, as on sm_90a (col-scale-sm90a.mlir). All assemble
// without spills. (Not run on a Blackwell GPU: none is available.)
// RUN: fusion-opt %s -fusion-plan-kernels -convert-fusion-to-gpu -canonicalize -cse | FileCheck %s
// RUN: fusion-opt %s "-fusion-to-gpu=format=isa" > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// PTXAS-DAG: ptxas ok: wgrad_split_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wgrad_split_kernel0_splitk registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: wgrad_whole_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: decode_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED
// CHECK-LABEL: func.func @wgrad_split
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@wgrad_split_kernel0_splitk {{.*}} %{{.*}} : memref<?xbf16>, %c1024 : index)
// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@decode_kernel0 {{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>
// The 8-column groups: times the scales, plus the bias.
// CHECK-LABEL: gpu.func @decode_kernel0
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: arith.addf %[[P]], %{{.*}} : vector<8xf32>

module attributes {fusion.target = #fusion.target<"sm_100a">} {
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

func.func @decode(%x: tensor<4x1024xbf16>, %w: tensor<512x1024xbf16>, %s: tensor<512xbf16>, %b: tensor<512xbf16>) -> tensor<4x512xbf16> {
  %y = fusion.fused_matmul %x, %w col_bias(%b : tensor<512xbf16>) col_scale(%s : tensor<512xbf16>) {transpose_rhs}
      : tensor<4x1024xbf16>, tensor<512x1024xbf16> -> tensor<4x512xbf16>
  return %y : tensor<4x512xbf16>
}
}
