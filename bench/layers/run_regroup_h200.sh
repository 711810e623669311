#!/usr/bin/env bash
# The regrouped training steps on the H200 (the grad epilogue in the
# epilogue warps of the dgrad GEMM), against the unregrouped ones. Needs two
# artifact folders built on the build machine (no GPU there):
#
#   bash bench/layers/build_regrouped.sh build    -> build/gpu-regroup, build/gpu-plain
#
# then, on the H200, from the repository root:
#
#   COMMIT=abc OUT=/tmp/out PHASES="tests sanitize bench" \
#     bash bench/layers/run_regroup_h200.sh build/gpu-regroup build/gpu-plain
#
# tests: test/gpu/test_train_step_gpu.py on both folders (float64
# references, dgamma / dbeta bitwise over two calls; H = 2048 / 4096 are not
# regrouped: their rows need the global-memory exchange); sanitize:
# memcheck and racecheck (synccheck once) on regrouped steps: clusters of 4
# (H = 1024, RMSNorm, the LayerNorm residual block) and 3 (768, racecheck),
# one CTA (H = 256, with and without the residual), M = 4097 (a partial last
# row block) and 7; bench: bench/bench_train_step.py on both folders in the
# same run (H = 512, 768, 1024), the first folder being the regrouped one.
# Phases can be run one call at a time (each within the device's 10-minute
# limit): tests ~4-6 minutes for both folders, sanitize ~5-8, bench ~5.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PHASES=${PHASES:-tests sanitize bench}
regroup=${1:-build/gpu-regroup}
plain=${2:-build/gpu-plain}
has() { [[ " $PHASES " == *" $1 "* ]]; }
if has tests; then
  # Both folders: the residual-block and H = 256 steps are new in the
  # unregrouped build too.
  for d in "$regroup" "$plain"; do
    log="$OUT/train_step_tests_$(basename "$d").txt"
    FUSION_GPU_ARTIFACTS=$d timeout 600 python3 -m pytest -v -s -rs \
      test/gpu/test_train_step_gpu.py > "$log" 2>&1
    echo "== [$d] test_train_step_gpu.py: exit $?"
    grep -E "FAILED|Error|^SKIPPED" "$log" | cut -c1-240 | head -20
    tail -n 1 "$log"
  done
fi
if has sanitize; then
  # (program, M, tools): clusters of 4 (RMSNorm; LayerNorm with the
  # residual) and 3, one CTA (with and without the residual).
  for c in "train_step_rms_h1024 4097 memcheck racecheck" \
           "train_step_res_ln_h1024 4097 memcheck racecheck synccheck" \
           "train_step_ln_h768 4097 racecheck" \
           "train_step_rms_h256 4097 memcheck racecheck" \
           "train_step_res_ln_h256 7 memcheck racecheck"; do
    set -- $c
    name=$1 m=$2; shift 2
    for tool in "$@"; do
      log="$OUT/sanitize_${tool}_${name}_${m}_regroup.txt"
      FUSION_GPU_ARTIFACTS=$regroup timeout 180 compute-sanitizer --tool $tool \
        --error-exitcode 9 python3 test/gpu/run_one_layer.py $name $m > "$log" 2>&1
      echo "== [$regroup] compute-sanitizer $tool $name M=$m: exit $? ($(grep -E 'SUMMARY|NaN left|Error' "$log" | tr '\n' ' ' | cut -c1-200))"
    done
  done
fi
if has bench; then
  for d in "$regroup" "$plain"; do
    tag=$(basename "$d")
    FUSION_GPU_ARTIFACTS=$d timeout 280 python3 bench/bench_train_step.py --hs 512,768,1024 \
      --rounds 3 --out "$OUT/bench_train_step_$tag.json" --commit "${COMMIT:-unknown}" \
      > "$OUT/bench_train_step_${tag}_log.txt" 2>&1
    echo "== [$d] bench_train_step.py: exit $?"
    sed -n '/^| /p' "$OUT/bench_train_step_${tag}_log.txt"
  done
fi
