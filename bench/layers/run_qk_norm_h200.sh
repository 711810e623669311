#!/usr/bin/env bash
# The per-head norm in the GEMM epilogue (norm_group_size: Qwen3's and
# Gemma 3's q_norm / k_norm) on the GPU, from BUILD/gpu as
# `bench/build_gpu_artifacts.sh build cases` and
# `ARTIFACTS=build/gpu bash bench/layers/build_layers.sh build '^qwen3_q_norm_h'`
# leave it: the correctness suite's heads_* kernels and the qwen3_q_norm
# layers against float64, compute-sanitizer on three of them, and the layer
# benchmark (ours fused and unfused against eager, torch.compile and cuBLAS's
# q_proj alone). With FRONTEND=DIR (prepared here by
# `bench/frontend/bench_frontend.py --prepare DIR --only qwen3`, about 2
# minutes, and carried) also the front end's Qwen3 cases: q_proj + q_norm
# and the decoder layer's attention inputs (input RMSNorm, q/k/v, q_norm,
# k_norm) as PyTorch modules, against torch.compile.
#
# With TRAINING=DIR (`FUSION_TOOLS_DIR=build/bin python3
# test/gpu/test_frontend_training_gpu.py --prepare DIR`, about 4 minutes)
# also Qwen3's q_norm / k_norm trained through the front end.
#
#   COMMIT=abc OUT=/tmp/out [FRONTEND=build/frontend-gpu] [TRAINING=build/frontend-training-gpu] \
#     bash bench/layers/run_qk_norm_h200.sh [ARTIFACTS]
#
# About 3 minutes (7 with the front end).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export FUSION_GPU_ARTIFACTS=${1:-build/gpu}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
here=$(python3 -c "import torch; print(torch.__version__)")
for d in ${FRONTEND:-} ${TRAINING:-}; do  # the prepared libraries are keyed by torch's export
  [ -f "$d/torch-version.txt" ] && [ "$(cat "$d/torch-version.txt")" != "$here" ] && \
    echo "WARNING: $d was prepared with torch $(cat "$d/torch-version.txt"), this is $here: its libraries may not be found"
done
if [ -z "${FRONTEND_ONLY:-}" ]; then  # FRONTEND_ONLY=1: only the front end's parts
for t in "test_fused_matmul_gpu.py -k heads" "test_layers_gpu.py -k qwen3"; do
  set -- $t
  log="$OUT/$(basename "$1" .py)_qk_norm.txt"
  timeout 300 python3 -m pytest -v -s -rs "test/gpu/$1" "${@:2}" > "$log" 2>&1
  echo "== pytest $t: exit $?"
  grep -E "FAILED|Error|^SKIPPED|rel err" "$log" | cut -c1-200 | head -40
  tail -n 1 "$log"
done
run() {  # tool log command...
  local tool=$1 log=$2; shift 2
  timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$log" 2>&1
  echo "== compute-sanitizer $tool $*: exit $? ($(grep -E 'SUMMARY|NaN left|Error' "$log" | tr '\n' ' ' | cut -c1-200))"
}
run memcheck "$OUT/sanitize_memcheck_qwen3.txt" python3 test/gpu/run_one_layer.py qwen3_q_norm_h2048 4099
run racecheck "$OUT/sanitize_racecheck_qwen3.txt" python3 test/gpu/run_one_layer.py qwen3_q_norm_h2048 4099
run memcheck "$OUT/sanitize_memcheck_heads_ln.txt" python3 test/gpu/run_one_case.py heads_ln_g64_3000x256x512_residual
run racecheck "$OUT/sanitize_racecheck_heads_g32.txt" python3 test/gpu/run_one_case.py heads_rms_g32_n96
timeout 400 python3 bench/bench_layers.py --kinds qwen3_q_norm --rounds 3 \
  --out "$OUT/bench_layers_qwen3_q_norm.json" --commit "${COMMIT:-unknown}" \
  > "$OUT/bench_layers_qwen3_q_norm_log.txt" 2>&1
echo "== bench_layers.py qwen3_q_norm: exit $?"
sed -n '/^| /p' "$OUT/bench_layers_qwen3_q_norm_log.txt"
tail -n 5 "$OUT/bench_layers_qwen3_q_norm_log.txt"
fi
if [ -n "${TRAINING:-}" ]; then
  FUSION_FRONTEND_TRAINING_DIR=$TRAINING timeout 300 python3 -m pytest -v -s -rs \
    test/gpu/test_frontend_training_gpu.py -k qwen3 > "$OUT/frontend_training_qwen3.txt" 2>&1
  echo "== test_frontend_training_gpu.py -k qwen3: exit $?"
  grep -E "FAILED|Error|rel err" "$OUT/frontend_training_qwen3.txt" | cut -c1-200 | head -30
  tail -n 1 "$OUT/frontend_training_qwen3.txt"
fi
if [ -n "${FRONTEND:-}" ]; then
  timeout 300 python3 bench/frontend/bench_frontend.py --dir "$FRONTEND" --only "${FRONTEND_CASES:-qwen3}" \
    --json "$OUT/bench_frontend_qwen3.json" --commit "${COMMIT:-unknown}" \
    > "$OUT/bench_frontend_qwen3_log.txt" 2>&1
  echo "== bench_frontend.py qwen3: exit $?"
  sed -n '/^| /p' "$OUT/bench_frontend_qwen3_log.txt"
  FUSION_FRONTEND_DIR=$FRONTEND timeout 120 python3 -m pytest -v -s -rs \
    test/gpu/test_weight_folds_gpu.py > "$OUT/weight_folds_gpu.txt" 2>&1
  echo "== test_weight_folds_gpu.py: exit $?"
  grep -E "PASS|FAIL|Error|SKIP" "$OUT/weight_folds_gpu.txt" | cut -c1-200 | head -20
  # Decode-sized calls (16 tokens), where the weights' folds kept between
  # calls (cache_weight_folds) matter most.
  timeout 150 python3 bench/frontend/bench_frontend.py --dir "$FRONTEND" --tokens 16 \
    --only "qwen3_attention_inputs_h|llama_prenorm_h4096" \
    --json "$OUT/bench_frontend_decode16.json" --commit "${COMMIT:-unknown}" \
    > "$OUT/bench_frontend_decode16_log.txt" 2>&1
  echo "== bench_frontend.py 16 tokens: exit $?"
  sed -n '/^| /p' "$OUT/bench_frontend_decode16_log.txt"
fi
