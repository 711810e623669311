#!/usr/bin/env bash
# From a fresh Debian 12 machine: install what is missing, build, and run the
# main job on the bundled example (examples/transformer_block.mlir):
#   1. lower the fused program to its reference semantics (linalg) with fusion-opt,
#   2. execute the fused and the unfused programs on the CPU on the same random
#      inputs and compare them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" fusion-opt fusion-runner
ex="$root/examples/transformer_block.mlir"
echo "== fusion-opt: the fused block lowered to linalg (first lines)"
"$build/bin/fusion-opt" "$ex" --convert-fusion-to-linalg | head -n 20
echo "== fusion-runner: fused vs unfused block on the CPU"
"$build/bin/fusion-runner" "$ex" -e block_unfused --compare=block_fused --atol=2e-2 --rtol=2e-2
