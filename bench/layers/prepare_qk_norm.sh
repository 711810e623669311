#!/usr/bin/env bash
# Builds, here (no GPU), everything bench/layers/run_qk_norm_h200.sh runs:
# the correctness and benchmark case libraries and the runtime (BUILD/gpu),
# the qwen3_q_norm layers (BUILD/gpu/layers), the front end's Qwen3 cases
# (BUILD/frontend-gpu) and its training tests (BUILD/frontend-training-gpu).
# Then, on the device, with those three folders carried:
#
#   COMMIT=abc OUT=$OUT FRONTEND=build/frontend-gpu TRAINING=build/frontend-training-gpu \
#     bash bench/layers/run_qk_norm_h200.sh build/gpu
#
#   bash bench/layers/prepare_qk_norm.sh [BUILD]      # about 7 minutes on 2 cores
set -euo pipefail
build=${1:-build}
py=${PYTHON:-.venv/bin/python}
bash bench/build_gpu_artifacts.sh "$build" cases > /dev/null
ARTIFACTS="$build/gpu" bash bench/layers/build_layers.sh "$build" '^qwen3_q_norm_h'
FUSION_TOOLS_DIR="$build/bin" "$py" bench/frontend/bench_frontend.py \
  --prepare "$build/frontend-gpu" --only "qwen3|llama_prenorm" > "$build/frontend-gpu.log" 2>&1
FUSION_TOOLS_DIR="$build/bin" "$py" test/gpu/test_frontend_training_gpu.py \
  --prepare "$build/frontend-training-gpu" > "$build/frontend-training-gpu.log" 2>&1
du -sh "$build/gpu" "$build/frontend-gpu" "$build/frontend-training-gpu"
