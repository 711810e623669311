// The row family's norm gradients with a residual (the fusion.add that
// fusion-plan-kernels folds in): the dx kernel takes the residual as one
// more flat argument after the weight, reads it with dy and x at the same
// positions (16-byte vectors of its own element type: 8 bf16, or 8 f32 as
// two), and adds it to dx in f32 before the one rounding. Both targets
// lower norm gradients through this family; each kernel assembles without
// spills for both.
// RUN: fusion-opt %s --fusion-plan-kernels --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// RUN: FileCheck %s --check-prefix=PTXST < %t.isa.mlir
// RUN: fusion-opt %s --fusion-set-target=chip=sm_100a --fusion-plan-kernels --fusion-to-gpu=format=isa > %t.sm100a.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.sm100a.isa.mlir | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

// PTXAS-DAG: ptxas ok: rms_grad_res_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: rms_grad_res_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_res_f32_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_res_f32_kernel0_params registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: ln_grad_res_odd_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// RMSNorm's gradient with a weight and a bf16 residual, N = 1024 (two
// vectors of 8 per thread): the residual goes to the dx kernel flat, as
// argument 4, between the weight and dx.
// CHECK-LABEL: func.func @rms_grad_res(
// CHECK-SAME: %{{[^:]*}}: memref<?x1024xbf16>, %{{[^:]*}}: memref<?x1024xbf16>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<1024xbf16>, %[[RES:[^:]*]]: memref<?x1024xbf16>
// CHECK: %[[RESF:.*]] = memref.reinterpret_cast %[[RES]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x1024xbf16> to memref<?xbf16>
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@rms_grad_res_kernel0 {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xbf16>, %[[RESF]] : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : index)
// CHECK: gpu.launch_func async {{.*}}@rms_grad_res_kernel0_params
func.func @rms_grad_res(%dy: tensor<?x1024xbf16>, %x: tensor<?x1024xbf16>, %rstd: tensor<?xf32>,
                        %w: tensor<1024xbf16>, %res: tensor<?x1024xbf16>) -> (tensor<?x1024xbf16>, tensor<1024xf32>) {
  %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<1024xbf16>) residual(%res : tensor<?x1024xbf16>)
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xf32> -> tensor<?x1024xbf16>, tensor<1024xf32>
  return %dx, %dw : tensor<?x1024xbf16>, tensor<1024xf32>
}

// LayerNorm's gradient with an f32 residual beside bf16 data, N = 768: the
// kernel's residual argument is memref<?xf32>.
// CHECK-LABEL: func.func @ln_grad_res_f32(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@ln_grad_res_f32_kernel0 {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : index)
func.func @ln_grad_res_f32(%dy: tensor<?x768xbf16>, %x: tensor<?x768xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>,
                           %w: tensor<768xbf16>, %res: tensor<?x768xf32>)
    -> (tensor<?x768xbf16>, tensor<768xf32>, tensor<768xf32>) {
  %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd weight(%w : tensor<768xbf16>)
      residual(%res : tensor<?x768xf32>) {with_bias_grad}
      : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x768xbf16>, tensor<768xf32>, tensor<768xf32>
  return %dx, %dw, %db : tensor<?x768xbf16>, tensor<768xf32>, tensor<768xf32>
}

// 1001 bf16 columns (element accesses, a ragged last vector), no parameter
// gradients: only the dx kernel.
// CHECK-LABEL: func.func @ln_grad_res_odd(
// CHECK: gpu.launch_func async {{.*}}@ln_grad_res_odd_kernel0
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @ln_grad_res_odd(%dy: tensor<?x1001xbf16>, %x: tensor<?x1001xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>,
                           %res: tensor<?x1001xbf16>) -> tensor<?x1001xbf16> {
  %dx = fusion.layer_norm_grad %dy, %x, %mean, %rstd residual(%res : tensor<?x1001xbf16>)
      : tensor<?x1001xbf16>, tensor<?x1001xbf16>, tensor<?xf32>, tensor<?xf32> -> tensor<?x1001xbf16>
  return %dx : tensor<?x1001xbf16>
}
}

// The kernels (after the host functions). RMSNorm, bf16: per row step the
// thread reads x, dy and the residual at the same place, 16 bytes each,
// before the group sums' shuffles, and adds the residual to dx in f32
// before the truncation to bf16 and the store.
// CHECK-LABEL: gpu.func @rms_grad_res_kernel0(
// CHECK-SAME: %[[KDY:[^:]*]]: memref<?xbf16>, %[[KX:[^:]*]]: memref<?xbf16>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?xbf16>, %[[KRES:[^:]*]]: memref<?xbf16>, %[[KDX:[^:]*]]: memref<?xbf16>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: index)
// CHECK: scf.for
// CHECK: vector.load %[[KX]][%[[AT0:[0-9]+]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.load %[[KDY]][%[[AT0]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.load %[[KRES]][%[[AT0]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.load %[[KX]][%[[AT1:[0-9]+]]] {alignment = 16 : i64}
// CHECK: vector.load %[[KDY]][%[[AT1]]] {alignment = 16 : i64}
// CHECK: vector.load %[[KRES]][%[[AT1]]] {alignment = 16 : i64}
// CHECK: gpu.shuffle xor
// CHECK: %[[D0:.*]] = math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// The residual's bf16 pairs widen by one byte permute an element (the
// low half, bytes {0, 0, b0, b1}: selector 0x1044 = 4164; the high half
// 0x3244 = 12868).
// CHECK-NEXT: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK-COUNT-4: nvvm.prmt <default> %c4164_i32, %{{.*}}, %c0_i32 : i32
// CHECK: %[[R0:.*]] = vector.from_elements %{{.*}} : vector<8xf32>
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[D0]], %[[R0]] : vector<8xf32>
// CHECK-NEXT: %[[B0:.*]] = arith.truncf %[[S0]] : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT: vector.store %[[B0]], %[[KDX]][%[[AT0]]]
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: vector.store %{{.*}}, %[[KDX]][%[[AT1]]]
// CHECK: gpu.return

// LayerNorm with the f32 residual: its vectors are 8 f32 (32 bytes), read at
// dy's positions.
// CHECK-LABEL: gpu.func @ln_grad_res_f32_kernel0(
// CHECK-SAME: %[[KDY:[^:]*]]: memref<?xbf16>, %{{[^:]*}}: memref<?xbf16>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?xbf16>, %[[KRES:[^:]*]]: memref<?xf32>, %[[KDX:[^:]*]]: memref<?xbf16>
// CHECK: vector.load %[[KDY]][%[[AT:[0-9]+]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.load %[[KRES]][%[[AT]]] {alignment = 16 : i64} : memref<?xf32>, vector<8xf32>
// CHECK: vector.store %{{.*}}, %[[KDX]][%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>

// 1001 columns: the residual is read an element at a time where dy is.
// CHECK-LABEL: gpu.func @ln_grad_res_odd_kernel0(
// CHECK-SAME: %[[KDY:[^:]*]]: memref<?xbf16>, %{{[^:]*}}: memref<?xbf16>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?xf32>, %[[KRES:[^:]*]]: memref<?xbf16>, %[[KDX:[^:]*]]: memref<?xbf16>, %{{[^:]*}}: index)
// CHECK: vector.load %[[KDY]][%[[AT:[0-9]+]]] {alignment = 2 : i64} : memref<?xbf16>, vector<1xbf16>
// CHECK: vector.load %[[KRES]][%[[AT]]] {alignment = 2 : i64} : memref<?xbf16>, vector<1xbf16>

// The PTX of the bf16 case: per row 16-byte loads, three per vector (x, dy
// and the residual: 6, where a gradient without residual has 4) and the
// weight's two vectors twice (before and after the group sums, L1 hits);
// 16-byte stores of dx's two vectors, and after the loop the CTA's partial
// row (two vectors of 8 f32, 32 bytes each).
// PTX: .entry rms_grad_res_kernel0(
// PTX-COUNT-10: ld.global.v4.b32
// PTX-NOT: ld.global.v4.b32
// PTX: .entry rms_grad_res_kernel0_params(
// PTXST: .entry rms_grad_res_kernel0(
// PTXST-COUNT-6: st.global.v4.b32
// PTXST-NOT: st.global
// PTXST: .entry rms_grad_res_kernel0_params(
