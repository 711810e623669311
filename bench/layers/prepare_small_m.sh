#!/usr/bin/env bash
# Builds, here (no GPU), what bench/layers/run_small_m.sh runs: Llama's
# pre-norm layers at hidden 1024 and 4096 and Qwen3's q_proj + q_norm at
# 2048 with the small-M kernel
# (fusion-compile --small-m) into BUILD/gpu-small-m and without it into
# BUILD/gpu-plain (--no-small-m: the baseline of the same run; the kernel is
# on by default since session 40), and the front end's
# llama_prenorm cases both ways into BUILD/frontend-small-m (one cache: the
# flag is part of a library's key). Then, on the device, carrying the three:
#
#   COMMIT=abc OUT=$OUT bash bench/layers/run_small_m.sh [BUILD]
#
#   bash bench/layers/prepare_small_m.sh [BUILD]    # about a minute
set -euo pipefail
build=${1:-build}
py=${PYTHON:-.venv/bin/python}
layers='^(llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048)(_unfused)?$'
ARTIFACTS="$build/gpu-small-m" bash bench/layers/build_layers.sh "$build" "$layers" --small-m
ARTIFACTS="$build/gpu-plain" bash bench/layers/build_layers.sh "$build" "$layers" --no-small-m
rm -rf "$build/frontend-small-m"
for flags in "--small-m" "--no-small-m"; do
  FUSION_COMPILE_FLAGS="$flags" FUSION_TOOLS_DIR="$build/bin" "$py" bench/frontend/bench_frontend.py \
    --prepare "$build/frontend-small-m" --only "llama_prenorm|qwen3_q_norm_h2048" > "$build/frontend-small-m.log" 2>&1
done
"$py" -c "import torch; print(torch.__version__)" > "$build/frontend-small-m/torch-version.txt"
du -sh "$build/gpu-small-m" "$build/gpu-plain" "$build/frontend-small-m"
