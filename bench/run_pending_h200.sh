#!/usr/bin/env bash
# The runs sessions 32-34 waited for (first run on an H100 in session 35,
# bench/results/2026-12-05_session35_h100.txt; still to do on an H200), in
# phases that each fit the device's 10-minute call, writing few files under
# OUT (only a handful come back):
#
#   attgrad   test/gpu/test_attention_grad_gpu.py: keys past 128 (session
#             32) and heads of 192 / 256 (column passes, session 34)
#   attsan    compute-sanitizer on the new attention backward kernels
#   rgtests   test/gpu/test_train_step_gpu.py on the regrouped steps (the row
#             dots of session 33)
#   rgsan     bench/layers/run_regroup_h200.sh's sanitizer phase
#   attbench  bench_attention.py --only grad (with the previous compiler's
#             libraries as _base where built)
#   rgbench   bench/layers/run_regroup_h200.sh's benchmark phase (BENCH_HS,
#             default 1024,2048; RG_FOLDERS, default gpu-regroup gpu-plain)
#
# Build here first (no GPU): `bench/build_gpu_artifacts.sh build attention`
# and `bash bench/layers/build_regrouped.sh build`; carry build/gpu,
# build/gpu-regroup, build/gpu-plain (and build/gpu-regroup-exchange for
# rgbench's third folder). On the device, from the repository root:
#
#   OUT=$OUT COMMIT=abc bash bench/run_pending_h200.sh attgrad rgtests attsan
#   OUT=$OUT COMMIT=abc bash bench/run_pending_h200.sh attbench rgbench
set -uo pipefail
export PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; C=${COMMIT:-unknown}
mkdir -p "$O"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > "$O/gpu.txt" 2>&1
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for p in "$@"; do
  case $p in
  attgrad)
    FUSION_GPU_ARTIFACTS=build/gpu timeout "${ATT_T:-250}" python3 -m pytest -q -s -rs \
      test/gpu/test_attention_grad_gpu.py > "$O/att_grad_tests.txt" 2>&1
    el "attention grad tests rc=$?"
    grep -E "FAILED|passed|failed" "$O/att_grad_tests.txt" | cut -c1-300 | tail -15 ;;
  attsan)
    for c in "memcheck gdpa_grad_d256 3 300" "racecheck gdpa_grad_d256 2 130" \
             "memcheck gdpa_grad_jagged_residual_d192 6 200" \
             "memcheck gdpa_grad_d64_dv256_kv200_f16 2 100" \
             "memcheck gdpa_grad_kv256_h2 3 300" "racecheck gdpa_grad_jagged_kv192 6 200"; do
      set -- $c; tool=$1; shift
      echo "== $c" >> "$O/att_sanitize.txt"
      FUSION_GPU_ARTIFACTS=build/gpu timeout "${SAN_T:-90}" compute-sanitizer --tool "$tool" \
        --error-exitcode 9 python3 test/gpu/run_one_attention.py "$@" >> "$O/att_sanitize.txt" 2>&1
      el "$c rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/att_sanitize.txt" | tail -1)"
    done ;;
  rgtests)
    FUSION_GPU_ARTIFACTS=build/gpu-regroup timeout "${RG_T:-200}" python3 -m pytest -q -s -rs \
      test/gpu/test_train_step_gpu.py > "$O/rg_tests.txt" 2>&1
    el "regroup train-step tests rc=$?"
    grep -E "FAILED|passed|failed|SKIPPED" "$O/rg_tests.txt" | cut -c1-300 | tail -20 ;;
  rgsan)
    COMMIT=$C OUT=$O/rgsan PHASES=sanitize bash bench/layers/run_regroup_h200.sh \
      build/gpu-regroup build/gpu-plain
    cat "$O"/rgsan/*.txt | grep -E "SUMMARY|Error|NaN" > "$O/rg_sanitize_summary.txt"
    rm -rf "$O/rgsan"; el "rgsan done" ;;
  attbench)
    FUSION_GPU_ARTIFACTS=build/gpu timeout "${BENCH_T:-300}" python3 bench/bench_attention.py \
      --only grad --extra-variant _base --out "$O/bench_attention_grad.json" --commit "$C" \
      > "$O/bench_attention_grad.txt" 2>&1
    el "attbench rc=$?"; grep "^|" "$O/bench_attention_grad.txt" | head -30 ;;
  rgbench)
    # shellcheck disable=SC2086
    COMMIT=$C OUT=$O PHASES=bench BENCH_HS=${BENCH_HS:-1024,2048} \
      bash bench/layers/run_regroup_h200.sh ${RG_FOLDERS:-build/gpu-regroup build/gpu-plain}
    el "rgbench done" ;;
  *) echo "unknown phase $p (attgrad attsan rgtests rgsan attbench rgbench)"; exit 2 ;;
  esac
done
