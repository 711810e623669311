// REQUIRES: ptxas, gcc-host
// Test that the sm_90a kernels convert-fusion-to-gpu generates are
// byte-identical to the recorded ones: a refactor of the generator must not
// change a single PTX instruction of any kernel without saying so. Covers
// every case the H200 tests and benchmarks run (bench/gen_cases.py:
// correctness and bench suites, the full post-norm included) here; the
// 96-variant single-CTA grid and the multi-CTA kernels are checked against
// Inputs/ptx-golden/{grid,cluster}.digest by ptxas-sweep-sm90a.mlir and
// ptxas-cluster-sm90a.mlir, which lower them anyway (on a GCC host, the
// `%if gcc-host` RUN lines there). Each line is a kernel and the sha256 of
// its PTX (Inputs/ptx_digest.py).
//
// A change that means to change kernels regenerates the digests and says so
// in its commit (the kernels then need the H200 again):
//   for s in grid correctness bench cluster; do ... > Inputs/ptx-golden/$s.digest
// with the RUN lines below. The digests depend on LLVM's NVPTX backend
// (Debian's llvm-22, 22.1.8, at the time of recording) and on the host
// compiler: ops created inside C++ argument lists come out in GCC's
// evaluation order (right to left), so only a GCC build of the tools
// (the default, and CI's first build) checks them.
//
// `diff` fails the test on any changed, missing or extra kernel; the counts
// below also fail it if a suite stopped producing kernels altogether.
// (Kernels appended to a suite add their mbarrier globals' "has been
// demoted" comments to the first kernel's text, so its digest changes with
// no instruction changed: the LayerNorm-prologue cases did so to
// gemm_256x512x256_kernel0.)
//
// RUN: rm -rf %t.cases && %python %S/../../../bench/gen_cases.py %t.cases --suite correctness
// RUN: fusion-opt %t.cases/correctness.mlir --fusion-to-gpu=format=isa | %python %S/Inputs/ptx_digest.py > %t.correctness.digest
// RUN: diff %S/Inputs/ptx-golden/correctness.digest %t.correctness.digest
// RUN: grep -c _kernel0 %t.correctness.digest | FileCheck --check-prefix=CORRECTNESS %s
// CORRECTNESS: {{^}}105{{$}}
// RUN: %python %S/../../../bench/gen_cases.py %t.cases --suite bench
// RUN: fusion-opt %t.cases/bench.mlir --fusion-to-gpu=format=isa | %python %S/Inputs/ptx_digest.py > %t.bench.digest
// RUN: diff %S/Inputs/ptx-golden/bench.digest %t.bench.digest
// RUN: grep -c _kernel0 %t.bench.digest | FileCheck --check-prefix=BENCH %s
// BENCH: {{^}}27{{$}}
