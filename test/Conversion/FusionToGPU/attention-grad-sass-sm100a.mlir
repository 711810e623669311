// REQUIRES: ptxas, cuobjdump
// Test that the sm_100a attention backward (Attention/AttentionGradTcgen05Kernel.cpp)
// assembles into the tcgen05 machine code its design names (cuobjdump -sass
// of ptxas -arch=sm_100a's cubin), on a dense fusion.gdpa_grad with D = Dv =
// L_kv = 128: the allocation (UTCATOMSWS.FIND_AND_SET.ALIGN), the relinquish
// (UVIRTCOUNT.DEALLOC.SMPOOL), one deallocation (UTCATOMSWS.AND); 16 TMA
// loads (K and V: 8, the tile's Q and dO halves: 8) and 12 TMA stores (dQ's
// two halves, dV, dK: 4 each); 64 UTCHMMA (dP^T 16, S^T 16, dV 8, dK 8, dQ
// 16) with the instruction descriptors M = 128, N = 64, both K-major
// (0x08100490: S^T, dP^T), N = 128 with B N-major (0x08210490: dV, dK) and
// N = 64 with A and B M/N-major (0x08118490: dQ from dS^T), the
// shared-memory descriptors' high word 0x40004040 (SBO 1024 bytes,
// version 1, 128-byte swizzle); four UTCBAR (sFull, empty[s], dqFull,
// kvEmpty); LDTM.x16 of S^T and dP^T (16) and LDTM.x32 of dQ, dV and dK
// (12); no local-memory traffic; EIATTR_TCGEN05_1CTA_USED.
// Never executed: no B200 here.
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas -arch=sm_100a --sass %cuobjdump < %t.isa.mlir > %t.sass
// RUN: FileCheck %s < %t.sass
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.sass
// RUN: grep -c 'UTCHMMA' %t.sass | FileCheck %s --check-prefix=MMAS
// RUN: grep -c 'UTCBAR' %t.sass | FileCheck %s --check-prefix=BARS
// RUN: grep -c 'LDTM.x16' %t.sass | FileCheck %s --check-prefix=LDTM16
// RUN: grep -c 'LDTM.x32' %t.sass | FileCheck %s --check-prefix=LDTM32
// RUN: grep -c 'UTMALDG.4D' %t.sass | FileCheck %s --check-prefix=LDTM16
// RUN: grep -c 'UTMASTG' %t.sass | FileCheck %s --check-prefix=LDTM32
// RUN: grep -c 'UTCATOMSWS.AND' %t.sass | FileCheck %s --check-prefix=ONE
// RUN: grep -c 'UVIRTCOUNT.DEALLOC.SMPOOL' %t.sass | FileCheck %s --check-prefix=ONE
// MMAS: {{^}}64{{$}}
// BARS: {{^}}4{{$}}
// LDTM16: {{^}}16{{$}}
// LDTM32: {{^}}12{{$}}
// ONE: {{^}}1{{$}}

module attributes {fusion.target = #fusion.target<"sm_100a">} {
func.func @kunlun(%do: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
}
}

// CHECK: ptxas ok: kunlun_kernel0 registers={{[0-9]+}} spills=0
// CHECK: Function : kunlun_kernel0
// CHECK: UTCATOMSWS.FIND_AND_SET.ALIGN
// CHECK: UVIRTCOUNT.DEALLOC.SMPOOL
// CHECK-DAG: 0x8100490
// CHECK-DAG: UMOV UR{{[0-9]+}}, 0x8210490 ;
// CHECK-DAG: UMOV UR{{[0-9]+}}, 0x8118490 ;
// CHECK-DAG: 0x40004040
// CHECK: UTCHMMA gdesc[UR{{[0-9]+}}], gdesc[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], tmem[UR{{[0-9]+}}], idesc[UR{{[0-9]+}}], !UPT ;
// CHECK: UTCBAR
// CHECK: UTCATOMSWS.AND
// CHECK: LDTM.x16
// CHECK: LDTM.x32
// CHECK: EIATTR_TCGEN05_1CTA_USED
// NOLOCAL-NOT: {{LDL|STL}}
