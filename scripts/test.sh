#!/usr/bin/env bash
# Configures, builds and runs every test that runs without a GPU:
# the lit suite (check-fusion) and the runtime's unit and loader tests.
#   scripts/test.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
jobs=${JOBS:-$(nproc)}
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
ninja -C "$build" -j "$jobs"
ninja -C "$build" -j "$jobs" check-fusion
# The runtime's CTest tests (runtime/test/): the C++ unit tests again and the
# Python loader's tests, which lit does not run. Absent when runtime/ was
# skipped (no cuda.h).
if [ -f "$build/runtime/CTestTestfile.cmake" ]; then
  ctest --test-dir "$build/runtime" --output-on-failure
fi
