#!/usr/bin/env bash
# frozen_weights=True (session 42; built, not yet run on a GPU): a CUDA graph
# captured after the warm-up reads the kept weight folds instead of
# recording their computation. Prepare here (the compiler, the libraries of
# the front end's decode cases and of test_weight_folds_gpu.py, with this
# machine's torch):
#   bash bench/frontend/run_frozen_graphs.sh --prepare build/frontend-frozen
# then on the device, carrying build/frontend-frozen:
#   C=abc OUT=$OUT bash bench/frontend/run_frozen_graphs.sh build/frontend-frozen
# With FLAGS="--decode-swap" on both (another folder), the same with the
# swapped decode body (bench/layers/run_decode_swap.sh): the libraries are
# cached per fusion-compile flags.
# Prediction (H100, 16 tokens, CUDA graphs, ours with the folds kept ->
# frozen): Llama's pre-norm at 4096 0.068 -> 0.042-0.048 ms (the 32 MB fold,
# about 21 us, leaves each replay), at 1024 0.025 -> 0.020-0.023, Qwen3's
# attention inputs at 4096 (three folds, 48 MB) 0.155 -> 0.115-0.125,
# Qwen3's q_proj + q_norm (no fold) unchanged; torch.compile's graphs 0.011 /
# 0.025 / 0.048 / 0.013 as in session 42.
set -u
export PYTHONUNBUFFERED=1
cases='llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048|qwen3_attention_inputs_h4096'
if [ "${1:-}" = --prepare ]; then
  dir=${2:-build/frontend-frozen}
  py=${PYTHON:-.venv/bin/python}
  FUSION_COMPILE_FLAGS=${FLAGS:-} FUSION_TOOLS_DIR=${FUSION_TOOLS_DIR:-build/bin} \
    "$py" bench/frontend/bench_frontend.py \
    --prepare "$dir" --only "$cases|llama_prenorm_h2048" > "$dir.log" 2>&1
  echo "prepare: exit $? ($(du -sh "$dir" | cut -f1), log $dir.log)"
  exit 0
fi
dir=${1:-build/frontend-frozen}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export FUSION_COMPILE_FLAGS=${FLAGS:-}
FUSION_FRONTEND_DIR=$dir timeout 200 python3 -m pytest -q -rs test/gpu/test_weight_folds_gpu.py \
  > "$OUT/weight_folds.txt" 2>&1
echo "== test_weight_folds_gpu.py: exit $? $(tail -n 1 "$OUT/weight_folds.txt")"
grep -E "FAILED|Error" "$OUT/weight_folds.txt" | cut -c1-200 | head -6
timeout 300 python3 bench/frontend/bench_frontend.py --dir "$dir" --tokens 16 --only "$cases" --commit "${C:-unknown}" \
  --json "$OUT/frontend16_frozen.json" > "$OUT/frontend16_frozen.txt" 2>&1
echo "== bench_frontend 16 tokens: exit $?"
grep -E "^\| (case|llama|qwen)" "$OUT/frontend16_frozen.txt" | cut -d'|' -f2,6,14-18
