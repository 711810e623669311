// REQUIRES: ptxas, fusion-runtime
// Test fusion-compile's small-M kernel: Llama's pre-norm projection written
// as its users write it (RMSNorm with its weight, then nn.Linear's [out, in]
// weight), any token count, gets it by default (fusion-to-gpu small-m): the
// host launches its GEMM with the flag that picks the body; with
// --no-small-m the GEMM has one body and no flag; --small-m is accepted.
// RUN: fusion-compile %s -o %t.so --keep-temps %t.small
// RUN: fusion-compile %s -o %t-flag.so --small-m --keep-temps %t.flag
// RUN: fusion-compile %s -o %t-off.so --no-small-m --keep-temps %t.off
// RUN: fusion-compile %s -o %t-split.so --small-m-split --keep-temps %t.split
// RUN: FileCheck %s --check-prefix=SPLIT < %t.split/host.ll
// RUN: FileCheck %s --check-prefix=NOSPLIT < %t.small/host.ll
// --small-m-split (experimental): the small-M body's decode splits, the
// kernel launched cooperatively.
// SPLIT: call i32 @fusionrtCooperativeGridLimit
// NOSPLIT-NOT: fusionrtCooperativeGridLimit
// RUN: fusion-compile %s -o %t-decode.so --decode-swap --keep-temps %t.decode
// RUN: FileCheck %s --check-prefix=DECODE < %t.decode/host.ll
// RUN: FileCheck %s --check-prefix=NODECODE < %t.small/host.ll
// --decode-swap (experimental): the third body, flag 2, for at most 32 tokens.
// DECODE: %[[DEC:.*]] = icmp ule i64 %{{.*}}, 32
// DECODE: select i1 %[[DEC]], i64 2, i64 %{{.*}}
// NODECODE-NOT: icmp ule i64 %{{.*}}, 32{{$}}
// RUN: FileCheck %s --check-prefix=SMALL < %t.small/host.ll
// RUN: FileCheck %s --check-prefix=SMALL < %t.flag/host.ll
// RUN: FileCheck %s --check-prefix=OFF < %t.off/host.ll
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s
// SMALL: call i32 @fusionrtMultiprocessorCount()
// The flag: the main kernel's tiles x 2 <= the SMs; it picks the grid (both
// bodies take the same dynamic shared memory at hidden 4096) and is the
// kernel's last argument.
// SMALL: %[[FLAG:.*]] = icmp ule i64 %[[TWICE:.*]], %{{.*}}
// SMALL: select i1 %[[FLAG]], i64 %{{.*}}, i64 %{{.*}}
// The main body is a pair of CTAs along M (cluster_m): the other launches
// in clusters of one.
// SMALL-NEXT: select i1 %[[FLAG]], i64 1, i64 2
// SMALL-NEXT: zext i1 %[[FLAG]] to i64
// OFF-NOT: icmp ule
// CHECK: T llama_prenorm
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @llama_prenorm(%x: tensor<?x4096xbf16>, %g: tensor<4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<?x4096xbf16> {
  %n = fusion.rms_norm %x weight(%g : tensor<4096xbf16>) {epsilon = 1.0e-06 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %y = fusion.matmul %n, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
}
