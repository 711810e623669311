#!/usr/bin/env bash
# Configures, builds and runs every test that runs without a GPU:
# the lit suite (check-fusion) and the runtime's unit and loader tests; with
# FUSION_SANITIZE=1 (CI sets it) then scripts/sanitize.sh: the same suite in
# an AddressSanitizer + UBSan build, and the fuzzers for a bounded time.
#   scripts/test.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
jobs=${JOBS:-$(nproc)}
# The Python loader's tests run with the virtual environment that
# scripts/install-deps.sh installs torch into ($FUSION_VENV, default .venv),
# where it exists, else with the Python 3 CMake finds. In CI (CI=true) their
# tests that need torch fail, not skip, where torch cannot be imported.
venv=${FUSION_VENV:-"$root/.venv"}
test_python=""
[ ! -x "$venv/bin/python3" ] || test_python="$venv/bin/python3"
require_torch=OFF
if [ "${CI:-}" = true ] || [ "${FUSION_TEST_REQUIRE_TORCH:-0}" = 1 ]; then
  require_torch=ON
fi
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DFUSION_TEST_PYTHON="$test_python" -DFUSION_TEST_REQUIRE_TORCH=$require_torch
ninja -C "$build" -j "$jobs"
ninja -C "$build" -j "$jobs" check-fusion
# The runtime's CTest tests (runtime/test/): the C++ unit tests again and the
# Python loader's tests, which lit does not run. Absent when runtime/ was
# skipped (no cuda.h).
if [ -f "$build/runtime/CTestTestfile.cmake" ]; then
  ctest --test-dir "$build/runtime" --output-on-failure
fi
# The Python front end's tests (python/test/): Hugging Face modules compiled
# for the CPU and run against PyTorch.
ctest --test-dir "$build/python" --output-on-failure
# The installed package as other projects use it (test/install/run.sh).
ctest --test-dir "$build/test/install" --output-on-failure
# The sanitizer and fuzzing half (scripts/sanitize.sh, about 9 minutes on
# 2 cores), in BUILD-san.
if [ "${FUSION_SANITIZE:-0}" = 1 ]; then
  "$root/scripts/sanitize.sh" "$build-san"
fi
