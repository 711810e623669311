// REQUIRES: ptxas
// The sm_100a GEMM kernel's rope epilogue (fusion-fuse's fusion-rope-epilogue),
// from the programs of rope-epilogue-sm90a.mlir: Llama's q_proj after its
// RMSNorm (Lazy Pre-Norm's row scale, then the rope; heads of 128,
// rotate-half), GPT-NeoX's partial rotary with its bias, GPT-J's
// interleaved pairs with f32 tables, Phi-3's heads of 96 (tiles of 192).
// The epilogue warpgroup holds a row per thread: an interleaved pair lies
// in one 8-column group; a rotate-half partner, R / 2 columns away, is read
// from the accumulator stage as its own 8-column group (tcgen05.ld x8),
// given the group's pieces (row scale, col_bias) and rotated at the store.
// Every kernel assembles without spilling (not run: no B200 here).
// RUN: fusion-opt %s --fusion-fuse "--fusion-plan-kernels=report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: fusion-opt %s --fusion-fuse --fusion-plan-kernels --convert-fusion-to-gpu | FileCheck %s
// RUN: fusion-opt %s --fusion-fuse --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir

// Heads of 128: tiles of 256 (two heads); Phi-3's heads of 96: 192.
// PLAN-LABEL: remark: GEMM kernel on sm_100a
// PLAN-SAME: tile_n = 256
// PLAN: tile_n = 256
// PLAN: tile_n = 256
// PLAN: tile_n = 192

// The host passes both tables; the kernel reads their row m mod T
// (memref.dim of cos), and rotates with a multiply and an FMA per group.
// CHECK-LABEL: func.func @llama_q_rope(
// CHECK-LABEL: gpu.func @llama_q_rope_kernel2
// CHECK-SAME: %[[COS:[a-z0-9]+]]: memref<?x?xbf16>, %[[SIN:[a-z0-9]+]]: memref<?x?xbf16>
// CHECK: memref.dim %[[COS]], %c0
// CHECK: arith.remui
// CHECK: vector.load %[[COS]]
// CHECK: vector.load %[[SIN]]
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-LABEL: gpu.func @gptj_rope_kernel
// CHECK: vector.shuffle {{.*}} [1, 0, 3, 2, 5, 4, 7, 6] : vector<8xf32>, vector<8xf32>
// CHECK: math.fma {{.*}} : vector<8xf32>

// The partners: Llama rotates all 128 columns of its two heads a tile (32
// groups), NeoX the first 32 of each (8); GPT-J's pairs need none.
// PTX-LABEL: .entry llama_q_rope_kernel2(
// PTX-COUNT-32: tcgen05.ld.sync.aligned.32x32b.x8.b32
// PTX-NOT: tcgen05.ld.sync.aligned.32x32b.x8.b32
// PTX-LABEL: .entry neox_rope_kernel0(
// PTX-COUNT-8: tcgen05.ld.sync.aligned.32x32b.x8.b32
// PTX-NOT: tcgen05.ld.sync.aligned.32x32b.x8.b32
// PTX-LABEL: .entry gptj_rope_kernel0(
// PTX-NOT: tcgen05.ld.sync.aligned.32x32b.x8.b32
// PTX: ret;

// PTXAS-DAG: ptxas ok: llama_q_rope_kernel{{[0-9]+}} registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: neox_rope_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: gptj_rope_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-DAG: ptxas ok: phi3_qkv_rope_kernel0 registers={{[0-9]+}} spills=0
// PTXAS-NOT: spills=[1-9]

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @llama_q_rope(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %wq: tensor<4096x4096xbf16>, %cos: tensor<?x128xbf16>, %sin: tensor<?x128xbf16>) -> tensor<?x4096xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<4096xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %q = fusion.matmul %n, %wq {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 128 : i64} : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
  return %r : tensor<?x4096xbf16>
}

func.func @neox_rope(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>, %b: tensor<2048xbf16>, %cos: tensor<?x32xbf16>, %sin: tensor<?x32xbf16>) -> tensor<?x2048xbf16> {
  %q = fusion.matmul %x, %w bias(%b : tensor<2048xbf16>) {transpose_rhs} : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 128 : i64} : tensor<?x2048xbf16>, tensor<?x32xbf16> -> tensor<?x2048xbf16>
  return %r : tensor<?x2048xbf16>
}

func.func @gptj_rope(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>, %cos: tensor<?x64xf32>, %sin: tensor<?x64xf32>) -> tensor<?x1024xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x1024xbf16>, tensor<1024x1024xbf16> -> tensor<?x1024xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 256 : i64, interleaved} : tensor<?x1024xbf16>, tensor<?x64xf32> -> tensor<?x1024xbf16>
  return %r : tensor<?x1024xbf16>
}

func.func @phi3_qkv_rope(%x: tensor<?x3072xbf16>, %w: tensor<3072x3072xbf16>, %cos: tensor<?x96xbf16>, %sin: tensor<?x96xbf16>) -> tensor<?x3072xbf16> {
  %q = fusion.matmul %x, %w {transpose_rhs} : tensor<?x3072xbf16>, tensor<3072x3072xbf16> -> tensor<?x3072xbf16>
  %r = fusion.rope %q, %cos, %sin {head_dim = 96 : i64} : tensor<?x3072xbf16>, tensor<?x96xbf16> -> tensor<?x3072xbf16>
  return %r : tensor<?x3072xbf16>
}
}
