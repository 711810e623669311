#!/usr/bin/env bash
# Issue 16's training kernels on the H200, for one or more artifact folders
# (each like build/gpu: libfusion_runtime.so and layers/ with layers.json),
# e.g. the default build and one compiled with fusion-compile --split-k:
# the weight-gradient and training-step tests, compute-sanitizer on one
# split weight gradient and one training step, and the two benchmarks.
#
#   COMMIT=abc OUT=/tmp/out PHASES="tests sanitize bench_wgrad bench_step" \
#     bash bench/layers/run_training_h200.sh build/gpu build/gpu-splitk
#
# About 4 minutes for tests + sanitize + bench_wgrad over two folders, 5 for
# bench_step over two (torch.compile's warm-up dominates).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PHASES=${PHASES:-tests sanitize bench_wgrad bench_step}
dirs=("$@"); [ ${#dirs[@]} -gt 0 ] || dirs=(build/gpu)
tag() { basename "$1"; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
for d in "${dirs[@]}"; do
  export FUSION_GPU_ARTIFACTS=$d
  if has tests; then
    for t in weight_grad train_step; do
      log="$OUT/${t}_tests_$(tag "$d").txt"
      timeout 240 python3 -m pytest -v -s -rs "test/gpu/test_${t}_gpu.py" > "$log" 2>&1
      echo "== [$d] test_${t}_gpu.py: exit $?"
      grep -E "FAILED|Error|^SKIPPED" "$log" | cut -c1-240 | head -20
      tail -n 1 "$log"
    done
  fi
  if has sanitize; then
    # Only our kernels (the tests' torch references run cuBLAS, whose own
    # kernels racecheck reports).
    for c in "weight_grad linear_wgrad_h768 linear_wgrad_h768-4097" \
             "train_step train_step_rms_h1024 train_step_rms_h1024-4097"; do
      set -- $c
      for tool in memcheck racecheck; do
        log="$OUT/sanitize_${tool}_$2_$(tag "$d").txt"
        timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=$2 \
          python3 -m pytest -q "test/gpu/test_$1_gpu.py::test_$1[$3]" > "$log" 2>&1
        echo "== [$d] compute-sanitizer $tool $2 M=4097: exit $? ($(grep -E 'SUMMARY|passed|failed' "$log" | tr '\n' ' ' | cut -c1-200))"
      done
    done
  fi
  if has bench_wgrad; then
    timeout 200 python3 bench/bench_weight_grad.py --out "$OUT/bench_weight_grad_$(tag "$d").json" \
      --commit "${COMMIT:-unknown}" > "$OUT/bench_weight_grad_$(tag "$d")_log.txt" 2>&1
    echo "== [$d] bench_weight_grad.py: exit $?"
    sed -n '/^| /p' "$OUT/bench_weight_grad_$(tag "$d")_log.txt"
  fi
  if has bench_step; then
    timeout 280 python3 bench/bench_train_step.py --out "$OUT/bench_train_step_$(tag "$d").json" \
      --commit "${COMMIT:-unknown}" > "$OUT/bench_train_step_$(tag "$d")_log.txt" 2>&1
    echo "== [$d] bench_train_step.py: exit $?"
    sed -n '/^| /p' "$OUT/bench_train_step_$(tag "$d")_log.txt"
  fi
done
