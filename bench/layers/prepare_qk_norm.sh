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
#
# The front end's libraries are found on the device by the program's text,
# which depends on the torch version that exported the model (torch.fx's
# partitioner orders nodes differently across versions): prepare with the
# device's torch (2.11 on the H200 machine), e.g.
#   python3 -m venv /tmp/venv211 && /tmp/venv211/bin/pip install torch==2.11.0 transformers==5.24.0
#   FRONTEND_PYTHON=/tmp/venv211/bin/python bash bench/layers/prepare_qk_norm.sh
set -euo pipefail
build=${1:-build}
py=${PYTHON:-.venv/bin/python}
fpy=${FRONTEND_PYTHON:-$py}
bash bench/build_gpu_artifacts.sh "$build" cases > /dev/null
ARTIFACTS="$build/gpu" bash bench/layers/build_layers.sh "$build" '^qwen3_q_norm_h'
FUSION_TOOLS_DIR="$build/bin" "$fpy" bench/frontend/bench_frontend.py \
  --prepare "$build/frontend-gpu" --only "qwen3|llama_prenorm" > "$build/frontend-gpu.log" 2>&1
FUSION_TOOLS_DIR="$build/bin" "$fpy" test/gpu/test_frontend_training_gpu.py \
  --prepare "$build/frontend-training-gpu" > "$build/frontend-training-gpu.log" 2>&1
"$fpy" -c "import torch; print(torch.__version__)" | tee "$build/frontend-gpu/torch-version.txt" \
  > "$build/frontend-training-gpu/torch-version.txt"
du -sh "$build/gpu" "$build/frontend-gpu" "$build/frontend-training-gpu"
