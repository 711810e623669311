// REQUIRES: ptxas, cuobjdump
// Test that the sm_100a attention kernel (Attention/AttentionTcgen05Kernel.cpp)
// assembles into the tcgen05 machine code its design names (cuobjdump -sass
// of ptxas -arch=sm_100a's cubin), on a dense fusion.gdpa with D = Dv =
// L_kv = 128: the allocation (UTCATOMSWS.FIND_AND_SET.ALIGN), the relinquish
// (UVIRTCOUNT.DEALLOC.SMPOOL); ten TMA loads; S = Q K^T as eight UTCHMMA with
// the instruction descriptor M = 128, N = 128, bf16 -> f32, both K-major
// (0x08200490), the first one predicated on "accumulate" (!UPT: it starts
// the accumulator), then a UTCBAR (commit to sFull); O = P V as eight UTCHMMA
// with B N-major (0x08210490), two UTCBAR (empty[s], oFull); the shared-memory
// descriptors' high word 0x40004040 (SBO 1024 bytes, version 1, 128-byte
// swizzle); one deallocation (UTCATOMSWS.AND); LDTM.x32 of S at columns 0 ..
// 96 and of O at 128 .. 224 (O beside S); the TMA stores; no local-memory
// traffic; EIATTR_TCGEN05_1CTA_USED. Then fusion.norm_attention over 2 heads
// (Attention/AttentionTcgen05Norms.cpp): the cluster barrier (UCGABAR), the
// same 8 + 8 UTCHMMA but two UTCBAR (sFull, oFull: the stage is released by
// the epilogue), q and ln_q into tensor memory (4 STTM.x32), the DSMEM
// exchange (STAS), 18 LDTM.x32 (S 4, the output's two passes 6 + 8).
// Never executed: no B200 here.
// RUN: fusion-opt %s -split-input-file --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a --sass %cuobjdump < %t.isa.mlir > %t.sass
// RUN: FileCheck %s < %t.sass
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.sass
// LDTM.x32: the gdpa kernel's 8 and the FlashNormAttention kernel's 18;
// STTM.x32: the latter's 4.
// RUN: grep -c 'LDTM.x32' %t.sass | FileCheck %s --check-prefix=LDTM
// RUN: grep -c 'STTM.x32' %t.sass | FileCheck %s --check-prefix=STTM
// LDTM: {{^}}26{{$}}
// STTM: {{^}}4{{$}}

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @dense(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = fusion.gdpa %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 0.125 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @flash(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %a: tensor<256xbf16>, %b: tensor<256xbf16>, %g: tensor<256xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v ln_weight(%a : tensor<256xbf16>) ln_bias(%b : tensor<256xbf16>) rms_weight(%g : tensor<256xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o, %m, %r, %rr : tensor<?x?x2x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
}

// CHECK: ptxas ok: dense_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : dense_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK: UVIRTCOUNT.DEALLOC.SMPOOL
// CHECK-COUNT-10: UTMALDG.4D
// CHECK: 0x40004040
// CHECK: UMOV UR{{[0-9]+}}, 0x8200490 ;
// CHECK: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], !UPT ;
// CHECK-COUNT-7: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], UPT ;
// CHECK: UTCBAR
// CHECK: UMOV UR{{[0-9]+}}, 0x8210490 ;
// CHECK: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], !UPT ;
// CHECK-COUNT-7: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], UPT ;
// CHECK-NOT: UTCHMMA
// CHECK: UTCBAR
// CHECK: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0x20] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0x40] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0x60] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0x80] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0xa0] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0xc0] ;
// CHECK: LDTM.x32 R{{[0-9]+}}, tmem[UR{{[0-9]+}}+0xe0] ;
// CHECK: UTMASTG.4D
// CHECK: EIATTR_TCGEN05_1CTA_USED

// CHECK: ptxas ok: flash_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : flash_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK: UCGABAR_ARV
// CHECK: UCGABAR_WAIT
// CHECK: UMOV UR{{[0-9]+}}, 0x8200490 ;
// CHECK-COUNT-8: UTCHMMA
// CHECK: UTCBAR
// CHECK: UMOV UR{{[0-9]+}}, 0x8210490 ;
// CHECK-COUNT-8: UTCHMMA
// CHECK-NOT: UTCHMMA
// CHECK: UTCBAR
// CHECK-NOT: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK-DAG: STTM.x32
// CHECK-DAG: STAS
// CHECK-DAG: LDTM.x32
// CHECK: EIATTR_TCGEN05_1CTA_USED
// NOLOCAL-NOT: {{LDL|STL}}
