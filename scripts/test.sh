#!/usr/bin/env bash
# Configures, builds and runs every test that runs without a GPU:
# the lit suite (check-fusion) and the runtime's unit tests.
#   scripts/test.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
jobs=${JOBS:-$(nproc)}
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
ninja -C "$build" -j "$jobs"
ninja -C "$build" -j "$jobs" check-fusion
