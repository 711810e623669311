// REQUIRES: ptxas, cuobjdump
// Test that the sm_100a GEMM kernels assemble into the tcgen05 machine code
// the design names (cuobjdump -sass of ptxas -arch=sm_100a's cubin): the
// tensor-memory allocation (UTCATOMSWS.FIND_AND_SET.ALIGN in its retry
// loop), the relinquish (UVIRTCOUNT.DEALLOC.SMPOOL) and one deallocation
// (UTCATOMSWS.AND); four UTCHMMA per K step (64 = 4 x k16), the first one
// predicated on "accumulate" and the others always accumulating; UTCBAR
// (tcgen05.commit to an mbarrier); LDTM.x32 (tcgen05.ld 32x32b.x32) in the
// epilogue; TMA loads and stores; no local-memory traffic; the ELF's
// EIATTR_TCGEN05_1CTA_USED; a norm epilogue's kernel (N = 512: two UTCHMMA
// per k16, LDTM / STTM passes over tensor memory), and a cluster's
// (UCGABAR, STAS: the DSMEM exchange); Lazy Pre-Norm's (LDS.128 of the A
// tiles by the row-sum warps, SHFL.BFLY); a grad epilogue's (LDTM per
// half chunk, the column sums' SHFL.BFLY butterfly). And end to end, the encoders' constants
// (fusion/Target/NVPTX/MmaDescriptors.h, docs/SM100A.md section 2): the
// instruction descriptor as a UMOV immediate (M = 128, N = 256, bf16 -> f32,
// A K-major, B N-major: 0x08410490; with transpose_rhs and N = 128, both
// K-major: 0x08200490) and the shared-memory descriptors' high word
// 0x40004040 (SBO 1024 bytes, version 1, 128-byte swizzle). cuobjdump comes
// from PyPI's nvidia-cuda-cuobjdump (scripts/install-deps.sh). Never
// executed: no B200 here.
// RUN: fusion-opt %s -split-input-file --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a --sass %cuobjdump < %t.isa.mlir | FileCheck %s
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a --sass %cuobjdump < %t.isa.mlir | FileCheck %s --check-prefix=NOLOCAL

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @plain(%a: tensor<1000x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<1000x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<1000x512xbf16>, tensor<512x256xbf16> -> tensor<1000x256xbf16>
  return %c : tensor<1000x256xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @nk(%a: tensor<1000x512xbf16>, %b: tensor<128x512xbf16>) -> tensor<1000x128xbf16> {
  %c = fusion.fused_matmul %a, %b {transpose_rhs} : tensor<1000x512xbf16>, tensor<128x512xbf16> -> tensor<1000x128xbf16>
  return %c : tensor<1000x128xbf16>
}
}

// -----

// A layer_norm epilogue with a residual over N = 512 (one 512-column
// accumulator stage, Gemm/GemmTcgen05Epilogue.cpp).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @ln(%a: tensor<1000x512xbf16>, %b: tensor<512x512xbf16>, %r: tensor<1000x512xbf16>, %w: tensor<512xbf16>, %nb: tensor<512xbf16>) -> (tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b residual(%r : tensor<1000x512xbf16>) norm_weight(%w : tensor<512xbf16>) norm_bias(%nb : tensor<512xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x512xbf16> -> tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %s : tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
}

// -----

// An rms_norm epilogue over a cluster of 2 CTAs of 512 columns (N = 1024).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @rms_cluster(%a: tensor<1000x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<1000x1024xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32} : tensor<1000x512xbf16>, tensor<512x1024xbf16> -> tensor<1000x1024xbf16>
  return %y : tensor<1000x1024xbf16>
}
}

// -----

// Lazy Pre-Norm (warps 2-3 read the A tiles' row sums, GemmTcgen05Kernel.cpp).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @lazy(%a: tensor<1000x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<1000x256xbf16> {
  %c = fusion.fused_matmul %a, %b {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32} : tensor<1000x512xbf16>, tensor<512x256xbf16> -> tensor<1000x256xbf16>
  return %c : tensor<1000x256xbf16>
}
}

// -----

// An rms_norm_grad epilogue with dweight (N = 512: one CTA,
// Gemm/GemmTcgen05GradEpilogue.cpp).
module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @rms_grad(%dy: tensor<1000x512xbf16>, %w: tensor<512x512xbf16>, %x: tensor<1000x512xbf16>, %r: tensor<1000xf32>, %g: tensor<512xbf16>) -> (tensor<1000x512xbf16>, tensor<512xf32>) {
  %dx, %dg = fusion.fused_matmul %dy, %w norm_weight(%g : tensor<512xbf16>) norm_input(%x : tensor<1000x512xbf16>) rstd(%r : tensor<1000xf32>) {epilogue = #fusion.epilogue<rms_norm_grad>} : tensor<1000x512xbf16>, tensor<512x512xbf16> -> tensor<1000x512xbf16>, tensor<512xf32>
  return %dx, %dg : tensor<1000x512xbf16>, tensor<512xf32>
}
}

// CHECK: ptxas ok: plain_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : plain_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK: UVIRTCOUNT.DEALLOC.SMPOOL
// CHECK: UTMALDG.2D
// CHECK-DAG: 0x40004040
// CHECK-DAG: UMOV UR{{[0-9]+}}, 0x8410490 ;
// CHECK: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], UP{{[0-6]}} ;
// CHECK-COUNT-3: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], UPT ;
// CHECK-NOT: UTCHMMA
// CHECK: UTCBAR
// CHECK: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK: LDTM.x32
// CHECK: UTMASTG.2D
// CHECK-NOT: UTCHMMA
// CHECK: EIATTR_TCGEN05_1CTA_USED

// CHECK: ptxas ok: nk_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : nk_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK-DAG: 0x40004040
// CHECK-DAG: UMOV UR{{[0-9]+}}, 0x8200490 ;
// CHECK-COUNT-4: UTCHMMA
// CHECK-NOT: UTCHMMA
// CHECK: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK: LDTM.x32
// CHECK: EIATTR_TCGEN05_1CTA_USED

// The norm kernel: per K step eight UTCHMMA (two of N = 256 per k16, both
// with the N = 256 idesc; the first two on the K step's first k16); in the
// epilogue the passes' LDTM.x32 pairs (their
// column offsets folded: +0x20), pass 1's STTM.x32 (the residual-added row
// written back), the rsqrt, the TMA store.
// CHECK: ptxas ok: ln_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : ln_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK: UMOV UR{{[0-9]+}}, 0x8410490 ;
// CHECK: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR[[ID:[0-9]+]]], UP{{[0-6]}} ;
// CHECK-NOT: UTCHMMA
// CHECK: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR[[ID]]], UP{{[0-6]}} ;
// CHECK-COUNT-6: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR[[ID]]], UPT ;
// CHECK-NOT: UTCHMMA
// CHECK: UTCBAR
// CHECK: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK-DAG: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0x20] ;
// CHECK-DAG: STTM.x32 tmem[UR{{[0-9]+}}], R{{[0-9]+}} ;
// CHECK-DAG: STTM.x32 tmem[UR{{[0-9]+}}+0x20], R{{[0-9]+}} ;
// CHECK-DAG: MUFU.RSQ
// CHECK-DAG: UTMASTG.2D
// CHECK-NOT: UTCHMMA
// CHECK: EIATTR_TCGEN05_1CTA_USED

// The cluster kernel: the cluster barrier (UCGABAR) before the roles, the
// MMAs as above, and in the epilogue the st.async of the row partials to
// the peers (STAS), the passes' LDTM.x32, the rsqrt.
// CHECK: ptxas ok: rms_cluster_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : rms_cluster_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK: UCGABAR_ARV
// CHECK: UCGABAR_WAIT
// CHECK-COUNT-8: UTCHMMA
// CHECK-NOT: UTCHMMA
// CHECK: UTCATOMSWS.AND
// CHECK-DAG: LDTM.x32
// CHECK-DAG: STAS
// CHECK-DAG: MUFU.RSQ
// CHECK-DAG: UTMASTG.2D
// CHECK-NOT: UTCHMMA
// CHECK: EIATTR_TCGEN05_1CTA_USED

// The Lazy kernel: the MMAs as in the plain one; the row-sum warps' sixteen
// 16-byte shared loads per K step (4 row groups x 4 chunks, the groups
// 0x1000 bytes = 32 rows apart) then their arrival on empty[s], the row
// halves' butterfly shuffles; the epilogue's rsqrt.
// CHECK: ptxas ok: lazy_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : lazy_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK-COUNT-4: UTCHMMA
// CHECK-NOT: UTCHMMA
// CHECK: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK: SYNCS.PHASECHK.TRANS64.TRYWAIT
// CHECK-COUNT-16: LDS.128 R{{[0-9]+}}, [R{{[0-9]+}}{{(\+0x[123]000)?}}] ;
// CHECK-NOT: LDS.128
// CHECK: SYNCS.ARRIVE.TRANS64
// CHECK-COUNT-4: SHFL.BFLY PT, R{{[0-9]+}}, R{{[0-9]+}}, 0x1, 0x1f ;
// CHECK: SYNCS.ARRIVE.TRANS64
// CHECK-DAG: LDTM.x32
// CHECK-DAG: MUFU.RSQ
// CHECK-NOT: UTCHMMA
// CHECK: EIATTR_TCGEN05_1CTA_USED

// The grad kernel: its passes' half-chunk LDTM.x32 (pass 1, the column
// sums, pass 2: six sites), the column sums' butterfly (SHFL.BFLY 8, 1, 2,
// 4 apart) and their 16-byte stores, dx's TMA store.
// CHECK: ptxas ok: rms_grad_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : rms_grad_kernel0
// CHECK-COUNT-8: UTCHMMA
// CHECK-NOT: UTCHMMA
// CHECK-COUNT-4: LDTM.x32
// CHECK: SHFL.BFLY PT, R{{[0-9]+}}, R{{[0-9]+}}, 0x8, 0x1f ;
// CHECK: SHFL.BFLY PT, R{{[0-9]+}}, R{{[0-9]+}}, 0x1, 0x1f ;
// CHECK: SHFL.BFLY PT, R{{[0-9]+}}, R{{[0-9]+}}, 0x2, 0x1f ;
// CHECK: SHFL.BFLY PT, R{{[0-9]+}}, R{{[0-9]+}}, 0x4, 0x1f ;
// CHECK: STG.E.128
// CHECK-COUNT-2: LDTM.x32
// CHECK-NOT: LDTM
// CHECK: UTMASTG.2D
// CHECK: EIATTR_TCGEN05_1CTA_USED

// NOLOCAL-NOT: {{LDL|STL}}
// NOLOCAL-NOT: WGMMA
