#!/usr/bin/env bash
# Builds, on this machine (no GPU needed), everything the H200 run
# (bench/run_h200.sh) uses, under BUILD/gpu: the correctness and benchmark
# case libraries (bench/gen_cases.py + fusion-compile), the bundled example,
# and a copy of the runtime. Carry BUILD/gpu to the device.
#
#   bench/build_gpu_artifacts.sh [BUILD] [PARTS]   (default: build, all parts)
#
# PARTS: a comma-separated subset of cases,layers,attention (the runtime copy
# is always made), e.g. `bench/build_gpu_artifacts.sh build attention` for
# the attention programs alone (about 30 s).
set -euo pipefail
build=${1:-build}
parts=${2:-cases,layers,attention}
out="$build/gpu"
mkdir -p "$out"
cp -P "$build"/lib/libfusion_runtime.so* "$out/"
if [[ ,$parts, == *,cases,* ]]; then
  for suite in correctness bench; do
    python3 bench/gen_cases.py "$out" --suite "$suite"
    "$build/bin/fusion-compile" "$out/$suite.mlir" -o "$out/lib$suite.so"
  done
  "$build/bin/fusion-compile" examples/transformer_block.mlir -o "$out/libexample.so"
fi
ls -l "$out"
# Issue 14's layers as users write them (bench/layers/): one library per
# program, fused and unfused, under $out/layers; a program the compiler
# refuses is skipped with its error.
if [[ ,$parts, == *,layers,* ]]; then
  bench/layers/build_layers.sh "$build"
fi
# Issue 17's attention programs (bench/attention/gen_attention.py): one
# library per program under $out/attention.
if [[ ,$parts, == *,attention,* ]]; then
  python3 bench/attention/gen_attention.py "$out"
  # The attention blocks twice: lib<name>.so with fusion.norm_attention (the
  # FlashNormAttention kernel, fusion-fuse's default) and lib<name>_unfused.so
  # without it (fusion-compile --no-norm-attention: its four kernels, the gdpa
  # adding ln_q as its residual).
  for f in "$out"/attention/*.mlir; do
    name=$(basename "$f" .mlir)
    if [[ $name == block_* ]]; then
      "$build/bin/fusion-compile" "$f" -o "$out/attention/lib$name.so"
      "$build/bin/fusion-compile" "$f" -o "$out/attention/lib${name}_unfused.so" --no-norm-attention
    else
      "$build/bin/fusion-compile" "$f" -o "$out/attention/lib$name.so"
    fi
  done
fi
