#!/usr/bin/env bash
# The sanitizer and fuzzing half of CI: builds the tools, the runtime and the
# two fuzz targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (LLVM's own LLVM_USE_SANITIZER; -O1, assertions in our code on; every
# file instrumented for libFuzzer's coverage feedback), runs the
# lit suite and the runtime's C++ tests in that build, then fuzzes each target
# for FUZZ_SECONDS (default 60). Any sanitizer report fails the run.
# The lit suite runs whole but for the two tests that take every kernel
# variant through LLVM's NVPTX backend and ptxas (ptxas-sweep, ptxas-cluster:
# minutes in the uninstrumented libLLVM, which a sanitizer does not see);
# generator-grid-sm90a.mlir runs the same variants through our generator.
#   scripts/sanitize.sh [build-dir]        (default: build-san)
# Needs clang-22 and libclang-rt-22-dev (scripts/install-deps.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build-san"}
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-60}
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_SANITIZER="Address;Undefined" \
  "-DLLVM_UBSAN_FLAGS=-fsanitize=undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all" \
  -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_C_FLAGS_RELEASE=-O1 \
  -DLLVM_USE_SANITIZE_COVERAGE=ON -DFUSION_BUILD_FUZZERS=ON
ninja -C "$build" -j "$jobs"
# Leaks are reported too. libMLIR and libLLVM themselves are not instrumented:
# allow_user_poisoning=0 keeps LLVM's BumpPtrAllocator, inlined into our code,
# from poisoning slabs the uninstrumented library hands out (test/fuzz/README.md).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allow_user_poisoning=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
LIT_FILTER_OUT='ptxas-(sweep|cluster)-sm90a' ninja -C "$build" -j "$jobs" check-fusion
ctest --test-dir "$build/runtime" --output-on-failure -R 'fusion-runtime-(tests|fake-driver-tests)'
"$root/scripts/fuzz.sh" "$build" "$fuzz_seconds"
echo "sanitize.sh: fuzzing the runtime's checks for $fuzz_seconds s"
mkdir -p "$build/fuzz/runtime-corpus"
"$build/bin/fusion-runtime-fuzz" "$build/fuzz/runtime-corpus" "$root/test/fuzz/runtime-regressions" \
  -max_total_time="$fuzz_seconds" -timeout=10 -artifact_prefix="$build/fuzz/artifacts/runtime-" \
  -print_final_stats=1
