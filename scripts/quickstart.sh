#!/usr/bin/env bash
# From a fresh Debian 12 machine: install what is missing, build, and run the
# main job on the bundled example (examples/transformer_block.mlir):
#   1. run the fusion passes and print every decision,
#   2. execute the block on the CPU before and after fusion (and the hand-fused
#      form) on the same random inputs and compare,
#   3. where the CUDA toolkit is installed, compile it to a GPU shared library.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" fusion-opt fusion-runner
ex="$root/examples/transformer_block.mlir"
echo "== fusion-opt --fusion-fuse: what becomes of each norm"
"$build/bin/fusion-opt" "$ex" --fusion-fuse=report=true -o /dev/null 2>&1 | grep remark
echo "== fusion-runner: the block before vs after fusion-fuse, on the CPU"
"$build/bin/fusion-runner" "$ex" -e block_unfused --after-passes=fusion-fuse --atol=3e-2 --rtol=3e-2
echo "== fusion-runner: hand-fused vs unfused block"
"$build/bin/fusion-runner" "$ex" -e block_unfused --compare=block_fused --atol=3e-2 --rtol=3e-2
if [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ]; then
  echo "== fusion-compile: sm_90a kernels + host code in build/libtransformer_block.so"
  ninja -C "$build" fusion_runtime >/dev/null
  "$build/bin/fusion-compile" "$ex" -o "$build/libtransformer_block.so"
  nm -D "$build/libtransformer_block.so" | grep " T "
fi
