// fusion.activation gets the row family's element-wise kernel (the one of
// fusion.add and fusion.mul, with one operand): the input viewed flat, 16-byte
// vectors where the innermost size allows, act(x) in f32 and one rounding on
// the store; gelu_tanh's and silu's sigmoid by ex2 and rcp.approx for 16-bit
// types, the exact formulas for f32.
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir | FileCheck %s --check-prefix=PTX
// REQUIRES: ptxas

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// Llama's gate, bf16 with dynamic rows: 4096 / 8 = 512 vectors per row, 4
// vectors per thread of a 256-thread CTA (grid ceil(rows * 512 / 1024), at
// least one CTA); input, output and the row count.
// CHECK-LABEL: func.func @silu_bf16(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x4096xbf16>, %[[Y:[^:]*]]: memref<?x4096xbf16>)
// CHECK: %[[ROWS:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[XF:.*]] = memref.reinterpret_cast %[[X]] {{.*}} to memref<?xbf16>
// CHECK: %[[YF:.*]] = memref.reinterpret_cast %[[Y]] {{.*}} to memref<?xbf16>
// CHECK: %[[VECS:.*]] = arith.muli %[[ROWS]], %c512
// CHECK: %[[CTAS:.*]] = arith.ceildivui %[[VECS]], %c1024
// CHECK: %[[GRID:.*]] = arith.maxui %[[CTAS]], %c1
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@silu_bf16_kernel0 blocks in (%[[GRID]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %{{.*}} args(%[[XF]] : memref<?xbf16>, %[[YF]] : memref<?xbf16>, %[[ROWS]] : index)
func.func @silu_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.activation %x {activation = #fusion.activation<silu>} : tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// f32 on a static rank-3 shape: 24 rows of 250 vectors of 4, 6 CTAs.
// CHECK-LABEL: func.func @gelu_f32(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@gelu_f32_kernel0 blocks in (%c6, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %{{.*}} args(%{{.*}} : memref<?xf32>, %{{.*}} : memref<?xf32>, %c24 : index)
func.func @gelu_f32(%x: tensor<4x6x1000xf32>) -> tensor<4x6x1000xf32> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu>} : tensor<4x6x1000xf32>
  return %y : tensor<4x6x1000xf32>
}

// A gated MLP's product after it: the activation's result lives in a pool
// buffer that the fusion.mul kernel reads, freed after it.
// CHECK-LABEL: func.func @gated(
// CHECK: %[[T:.*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.launch_func async {{.*}}@gated_kernel0 {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : index)
// CHECK: gpu.launch_func async {{.*}}@gated_kernel1 {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xbf16>, %{{.*}} : index)
// CHECK: gpu.dealloc async [%{{.*}}] %[[T]]
func.func @gated(%g: tensor<?x11008xbf16>, %u: tensor<?x11008xbf16>) -> tensor<?x11008xbf16> {
  %a = fusion.activation %g {activation = #fusion.activation<silu>} : tensor<?x11008xbf16>
  %h = fusion.mul %a, %u : tensor<?x11008xbf16>
  return %h : tensor<?x11008xbf16>
}

// 1001 is no multiple of 8: element accesses; a dynamic middle dimension,
// the rows 2 x ?.
// CHECK-LABEL: func.func @gelu_tanh_odd_f16(
// CHECK: %[[MID:.*]] = memref.dim %{{.*}}, %c1 : memref<2x?x1001xf16>
// CHECK: %[[ROWS:.*]] = arith.muli %[[MID]], %c2
// CHECK: gpu.launch_func async {{.*}}@gelu_tanh_odd_f16_kernel0 {{.*}} args(%{{.*}} : memref<?xf16>, %{{.*}} : memref<?xf16>, %[[ROWS]] : index)
func.func @gelu_tanh_odd_f16(%x: tensor<2x?x1001xf16>) -> tensor<2x?x1001xf16> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu_tanh>} : tensor<2x?x1001xf16>
  return %y : tensor<2x?x1001xf16>
}

// The other kinds, each type: one kernel each, all assembled by ptxas.
func.func @identity_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.activation %x {activation = #fusion.activation<identity>} : tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @relu_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.activation %x {activation = #fusion.activation<relu>} : tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @gelu_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu>} : tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @gelu_tanh_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu_tanh>} : tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @identity_f16(%x: tensor<?x768xf16>) -> tensor<?x768xf16> {
  %y = fusion.activation %x {activation = #fusion.activation<identity>} : tensor<?x768xf16>
  return %y : tensor<?x768xf16>
}
func.func @relu_f16(%x: tensor<?x768xf16>) -> tensor<?x768xf16> {
  %y = fusion.activation %x {activation = #fusion.activation<relu>} : tensor<?x768xf16>
  return %y : tensor<?x768xf16>
}
func.func @gelu_f16(%x: tensor<?x768xf16>) -> tensor<?x768xf16> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu>} : tensor<?x768xf16>
  return %y : tensor<?x768xf16>
}
func.func @gelu_tanh_f16(%x: tensor<?x768xf16>) -> tensor<?x768xf16> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu_tanh>} : tensor<?x768xf16>
  return %y : tensor<?x768xf16>
}
func.func @silu_f16(%x: tensor<?x768xf16>) -> tensor<?x768xf16> {
  %y = fusion.activation %x {activation = #fusion.activation<silu>} : tensor<?x768xf16>
  return %y : tensor<?x768xf16>
}
func.func @identity_f32(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y = fusion.activation %x {activation = #fusion.activation<identity>} : tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
func.func @relu_f32(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y = fusion.activation %x {activation = #fusion.activation<relu>} : tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
func.func @gelu_tanh_f32(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y = fusion.activation %x {activation = #fusion.activation<gelu_tanh>} : tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
func.func @silu_f32(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y = fusion.activation %x {activation = #fusion.activation<silu>} : tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}

// The kernels. bf16 silu: four guarded 16-byte vectors per thread, each
// element as x sigmoid(x), the sigmoid 1 / (1 + 2^(-x log2 e)) by exp2 and
// rcp.approx (no hardware tanh: its error in silu's negative tail is many
// ulps; no IEEE division); one rounding on the store.
// CHECK-LABEL: gpu.func @silu_bf16_kernel0(
// CHECK-SAME: %[[IN:[^:]*]]: memref<?xbf16>, %[[OUT:[^:]*]]: memref<?xbf16>, %[[R:[^:]*]]: index)
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[N:.*]] = arith.muli %[[R]], %c512
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[FIRST]], %[[N]]
// CHECK: scf.if %[[OK]]
// CHECK: %[[V:.*]] = vector.load %[[IN]][%[[AT:.*]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: %[[W:.*]] = arith.extf %[[V]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[E:.*]] = vector.extract %[[W]][0]
// CHECK: %[[Z:.*]] = arith.mulf %[[E]], %{{.*}} : f32
// CHECK: %[[P:.*]] = math.exp2 %[[Z]] : f32
// CHECK: %[[D:.*]] = arith.addf %[[P]], %{{.*}} : f32
// CHECK: %[[S:.*]] = nvvm.rcp.approx.ftz.f %[[D]] : f32
// CHECK: arith.mulf %[[E]], %[[S]] : f32
// CHECK-NOT: llvm.intr.tanh
// CHECK-NOT: arith.divf
// CHECK: %[[ACT:.*]] = vector.from_elements {{.*}} : vector<8xf32>
// CHECK: %[[T:.*]] = arith.truncf %[[ACT]] : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %[[T]], %[[OUT]][%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: }
// CHECK-COUNT-3: vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT: vector.store
// CHECK: gpu.return
// f32 gelu: 4-float vectors, the exact erf, no hardware tanh.
// CHECK-LABEL: gpu.func @gelu_f32_kernel0(
// CHECK-NOT: llvm.intr.tanh
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.tanh
// CHECK: math.erf
// CHECK-NOT: llvm.intr.tanh
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.tanh
// CHECK: gpu.return
// The ragged f16 rows: one element per access, 2-byte aligned.
// CHECK-LABEL: gpu.func @gelu_tanh_odd_f16_kernel0(
// CHECK: vector.load %{{.*}} {alignment = 2 : i64} : memref<?xf16>, vector<1xf16>
// CHECK: nvvm.rcp.approx.ftz.f
// CHECK: vector.store %{{.*}} {alignment = 2 : i64} : memref<?xf16>, vector<1xf16>
// identity is a copy: no conversion either way.
// CHECK-LABEL: gpu.func @identity_bf16_kernel0(
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: gpu.return
// relu: max(x, 0), NaN kept (arith.maximumf).
// CHECK-LABEL: gpu.func @relu_bf16_kernel0(
// CHECK: arith.maximumf
// f32 gelu_tanh and silu: the exact tanh, and exp and an IEEE division.
// CHECK-LABEL: gpu.func @gelu_tanh_f32_kernel0(
// CHECK-NOT: llvm.intr.tanh
// CHECK: math.tanh
// CHECK-NOT: llvm.intr.tanh
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @silu_f32_kernel0(
// CHECK-NOT: llvm.intr.tanh
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: llvm.intr.tanh
// CHECK: gpu.return
}

// Every kernel assembles without spills (18: the gated MLP's two).
// PTXAS-COUNT-18: ptxas ok: {{.*}}_kernel{{[0-9]}} registers={{[0-9]+}} spills=0
// PTXAS-NOT: FAILED
// PTXAS-NOT: ptxas ok
// The 16-bit kernels take silu's sigmoid by ex2.approx and rcp.approx, no
// MUFU tanh; the f32 ones the IEEE reciprocal.
// PTX-LABEL: .entry silu_bf16_kernel0(
// PTX: ld.global.v4.b32
// PTX: ex2.approx
// PTX: rcp.approx.ftz.f32
// PTX-NOT: tanh.approx
// PTX-NOT: rcp.rn
// PTX: st.global.v4.b32
// PTX: ret;
// PTX-LABEL: .entry gelu_f32_kernel0(
// PTX-NOT: tanh.approx.f32
// PTX: ld.global.v4.b32
// PTX-NOT: tanh.approx.f32
// PTX: st.global.v4.b32
// PTX-NOT: tanh.approx.f32
// PTX: ret;
// PTX-LABEL: .entry silu_f32_kernel0(
// PTX-NOT: tanh.approx.f32
// PTX: rcp.rn.f32
// PTX-NOT: tanh.approx.f32
// PTX: ret;
