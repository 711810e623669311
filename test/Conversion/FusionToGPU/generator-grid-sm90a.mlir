// Test that convert-fusion-to-gpu generates a kernel for every single-CTA
// variant of the grid (Inputs/gen_variant_grid.py: 96 kernels) and for the
// multi-CTA kernels, without LLVM's NVPTX backend: the generator alone, so
// that the sanitizer build (scripts/sanitize.sh) runs every variant through
// our code in seconds; ptxas-sweep-sm90a.mlir and ptxas-cluster-sm90a.mlir
// take the same kernels on to PTX and ptxas.
// RUN: %python %S/Inputs/gen_variant_grid.py > %t.mlir
// RUN: fusion-opt %t.mlir --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %S/ptxas-cluster-sm90a.mlir --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s --check-prefix=CHECK-CLUSTER
// CHECK-COUNT-96: gpu.func @v_n{{[0-9]+}}_{{.*}}_kernel0({{.*}} kernel
// CHECK-NOT: gpu.func
// CHECK-CLUSTER-COUNT-13: gpu.func @{{.*}}_kernel0({{.*}} kernel
// CHECK-CLUSTER-NOT: gpu.func
