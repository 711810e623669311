#!/usr/bin/env bash
# Issue 14's layer steps on the H200, after bench/build_gpu_artifacts.sh here
# (build/gpu carried along): the layer and row-op tests, then the layer and
# norm benchmarks, each under a time limit, logs and JSON into $OUT. Run at
# the end of bench/run_h200.sh, or alone:
#
#   COMMIT=abc1234 OUT=/tmp/out bash bench/layers/run_layers_h200.sh
#
# About 14 minutes when every library is built (run it in two calls if need be).
set -uo pipefail
export PYTHONUNBUFFERED=1 FUSION_GPU_ARTIFACTS=${FUSION_GPU_ARTIFACTS:-build/gpu}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for t in layers rows norm_grads weight_grad train_step; do
  timeout 240 python3 -m pytest -v -s -rs "test/gpu/test_${t}_gpu.py" > "$OUT/${t}_tests.txt" 2>&1
  echo "== test_${t}_gpu.py: exit $?"
  grep -E "FAILED|Error|^SKIPPED" "$OUT/${t}_tests.txt" | cut -c1-240 | head -30
  tail -n 1 "$OUT/${t}_tests.txt"
done
for b in layers norms; do
  timeout 360 python3 "bench/bench_$b.py" --artifacts "$FUSION_GPU_ARTIFACTS" \
    --out "$OUT/bench_$b.json" --commit "${COMMIT:-unknown}" > "$OUT/bench_${b}_log.txt" 2>&1
  echo "== bench_$b.py: exit $?"
  sed -n '/^| /p' "$OUT/bench_${b}_log.txt"
done
timeout 240 python3 bench/bench_weight_grad.py --out "$OUT/bench_weight_grad.json" \
  --commit "${COMMIT:-unknown}" > "$OUT/bench_weight_grad_log.txt" 2>&1
echo "== bench_weight_grad.py: exit $?"
sed -n '/^| /p' "$OUT/bench_weight_grad_log.txt"
timeout 300 python3 bench/bench_train_step.py --out "$OUT/bench_train_step.json" \
  --commit "${COMMIT:-unknown}" > "$OUT/bench_train_step_log.txt" 2>&1
echo "== bench_train_step.py: exit $?"
sed -n '/^| /p' "$OUT/bench_train_step_log.txt"
timeout 300 python3 bench/bench_norm_grads.py --out "$OUT/bench_norm_grads.json" \
  --commit "${COMMIT:-unknown}" > "$OUT/bench_norm_grads_log.txt" 2>&1
echo "== bench_norm_grads.py: exit $?"
sed -n '/^| /p' "$OUT/bench_norm_grads_log.txt"
