// RUN: fusion-opt %s --pass-pipeline='builtin.module(gpu.module(fusion-extern-dynamic-shared-memory))' | FileCheck %s

// The zero-sized shared global that convert-gpu-to-nvvm makes for
// gpu.dynamic_shared_memory becomes external (NVPTX: `.extern .shared ...[]`,
// the dynamic region after every static); the kernel's static mbarriers, a
// non-empty shared global and a zero-sized global outside shared memory stay
// as they are.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @__mbarrier() {addr_space = 3 : i32, alignment = 8 : i64, dso_local} : !llvm.array<2 x i64>
// CHECK: llvm.mlir.global internal @empty_global() {addr_space = 1 : i32, alignment = 16 : i64, dso_local} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64, dso_local} : !llvm.array<0 x i8>
  llvm.mlir.global internal @__mbarrier() {addr_space = 3 : i32, alignment = 8 : i64, dso_local} : !llvm.array<2 x i64>
  llvm.mlir.global internal @empty_global() {addr_space = 1 : i32, alignment = 16 : i64, dso_local} : !llvm.array<0 x i8>
}
