// RUN: fusion-opt %s --pass-pipeline='builtin.module(gpu.module(fusion-contract-float-ops))' | FileCheck %s

// Every arith float operation inside a gpu.module gets `contract` (kept
// beside the flags it had; one that has it already is left as it is);
// integer arithmetic and the host code outside the gpu.module are not
// touched.
// CHECK-LABEL: gpu.module @kernels
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<nnan,contract> : vector<4xf32>
// CHECK: arith.divf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addi %{{.*}}, %{{.*}} : index
// CHECK: arith.negf %{{.*}} fastmath<contract> : f32
// CHECK-LABEL: func.func @host
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: contract
gpu.module @kernels {
  gpu.func @kernel(%x: f32, %y: f32, %v: vector<4xf32>, %i: index) kernel {
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %y : f32
    %d = arith.subf %v, %v fastmath<nnan> : vector<4xf32>
    %q = arith.divf %s, %x fastmath<contract> : f32
    %j = arith.addi %i, %i : index
    %n = arith.negf %q : f32
    gpu.return
  }
}
func.func @host(%x: f32) -> f32 {
  %p = arith.mulf %x, %x : f32
  return %p : f32
}
