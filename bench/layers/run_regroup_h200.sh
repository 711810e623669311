#!/usr/bin/env bash
# The regrouped training steps on the H200 against the unregrouped ones.
# Needs the artifact folders built on the build machine (no GPU there):
#
#   bash bench/layers/build_regrouped.sh build
#     -> build/gpu-regroup, build/gpu-regroup-exchange, build/gpu-plain
#
# then, on the H200, from the repository root:
#
#   COMMIT=abc OUT=/tmp/out PHASES="tests sanitize bench" \
#     bash bench/layers/run_regroup_h200.sh build/gpu-regroup build/gpu-plain \
#       build/gpu-regroup-exchange
#
# tests: test/gpu/test_train_step_gpu.py on every folder given (float64
# references, dgamma / dbeta bitwise over two calls; in gpu-regroup the
# RMSNorm and LayerNorm steps at every H take the row dots, the residual
# blocks the exchange form); sanitize: memcheck and racecheck (synccheck
# once) on the first folder's steps: the row dot at H = 1024 and 4096 and at
# 256 with M = 7, LayerNorm's (its vectors) at 768 and 4096, the exchange
# form over a cluster of 4 (the LayerNorm residual block) and one CTA (the
# LayerNorm residual block at 256), M = 4097 (a partial last row block) and
# 7; bench:
# bench/bench_train_step.py on every folder in the same run (BENCH_HS, by
# default H = 512, 1024, 2048, 4096), the first folder being the regrouped
# one. Phases can be run one call at a time (each within the device's
# 10-minute limit): tests ~4-6 minutes for two folders, sanitize ~5-8,
# bench ~5 a folder.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PHASES=${PHASES:-tests sanitize bench}
regroup=${1:-build/gpu-regroup}
plain=${2:-build/gpu-plain}
folders=("$@")
[ ${#folders[@]} -gt 0 ] || folders=("$regroup" "$plain")
BENCH_HS=${BENCH_HS:-512,1024,2048,4096}
has() { [[ " $PHASES " == *" $1 "* ]]; }
if has tests; then
  for d in "${folders[@]}"; do
    log="$OUT/train_step_tests_$(basename "$d").txt"
    FUSION_GPU_ARTIFACTS=$d timeout 600 python3 -m pytest -v -s -rs \
      test/gpu/test_train_step_gpu.py > "$log" 2>&1
    echo "== [$d] test_train_step_gpu.py: exit $?"
    grep -E "FAILED|Error|^SKIPPED" "$log" | cut -c1-240 | head -20
    tail -n 1 "$log"
  done
fi
if has sanitize; then
  # (program, M, tools): the row dot (RMSNorm at 1024, 4096, 256; LayerNorm
  # at 768 and 4096), the exchange over a cluster of 4 (LayerNorm with the
  # residual) and one CTA (the LayerNorm residual block at 256).
  for c in "train_step_rms_h1024 4097 memcheck racecheck" \
           "train_step_rms_h4096 4097 memcheck racecheck synccheck" \
           "train_step_rms_h256 7 memcheck racecheck" \
           "train_step_ln_h768 4097 memcheck racecheck" \
           "train_step_ln_h4096 4097 racecheck" \
           "train_step_res_ln_h1024 4097 memcheck racecheck synccheck" \
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
  # torch.compile's warm-up dominates: its baselines with the first folder
  # only, the six-GEMM ideal with every folder.
  baselines=eager,compile,six_gemm
  for d in "${folders[@]}"; do
    tag=$(basename "$d")
    FUSION_GPU_ARTIFACTS=$d timeout 280 python3 bench/bench_train_step.py --hs "$BENCH_HS" \
      --baselines "$baselines" \
      --rounds 3 --out "$OUT/bench_train_step_$tag.json" --commit "${COMMIT:-unknown}" \
      > "$OUT/bench_train_step_${tag}_log.txt" 2>&1
    echo "== [$d] bench_train_step.py: exit $?"
    sed -n '/^| /p' "$OUT/bench_train_step_${tag}_log.txt"
    baselines=six_gemm
  done
fi
