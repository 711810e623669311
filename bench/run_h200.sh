#!/usr/bin/env bash
# The one device call: correctness tests, compute-sanitizer on one kernel of
# each family, and the benchmark. Expects the artifacts built here by
# bench/build_gpu_artifacts.sh under build/gpu (carried to the device).
# Every step has a time limit, so a hung kernel costs minutes, not the session.
# Pass the commit as a literal (COMMIT=abc1234): the device's copy of the tree
# does not carry this checkout's git state. The sanitizer logs go into one
# file, since only a few files under $OUT come back.
set -uo pipefail
export PYTHONUNBUFFERED=1 FUSION_GPU_ARTIFACTS=build/gpu
# The runtime tests use the runtime copied into build/gpu, so that carrying
# build/gpu alone runs them (they skip where no runtime library is found).
export FUSION_RUNTIME_LIBRARY=${FUSION_RUNTIME_LIBRARY:-$PWD/build/gpu/libfusion_runtime.so}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
timeout 120 python3 -m pytest -q -s -x runtime/test/gpu/test_runtime_gpu.py > "$OUT/runtime_tests.txt" 2>&1
grep -E "co-resident|passed|failed|Error" "$OUT/runtime_tests.txt" | tail -8
timeout 120 python3 -m pytest -v -s test/gpu/test_example_gpu.py 2>&1 | tee "$OUT/example_tests.txt" | grep -E "rel err|passed|failed"
timeout 240 python3 -m pytest -v -s test/gpu/test_fused_matmul_gpu.py > "$OUT/gpu_tests.txt" 2>&1
status=$?
grep -E "PASS|FAIL|Error|error|rel err|worst|passed|failed" "$OUT/gpu_tests.txt" | tail -60
if [ $status -ne 0 ]; then
  echo "kernel tests failed or timed out (exit $status): skipping the sanitizers and the benchmark"
  exit 1
fi
for t in memcheck racecheck synccheck; do
  for c in gemm_odd_m lazy_rms_odd_m ln_epi_odd_m rowscale_colbias_residual_n264 ln_epi_cluster4_n1024 ln_epi_cluster3_n576 gemm_nk_odd ln_epi_split_n1536; do
    log=$(mktemp)
    timeout 120 compute-sanitizer --tool $t --error-exitcode 9 python3 test/gpu/run_one_case.py $c > "$log" 2>&1
    status=$?
    # The head and the summary of a log: a racecheck report can be too large
    # to come back whole.
    { echo "== compute-sanitizer $t $c: exit $status"; head -c 4000 "$log"
      echo "[...]"; tail -n 3 "$log"; } >> "$OUT/sanitizer.txt"
    echo "compute-sanitizer $t $c: exit $status ($(grep -E 'ERROR SUMMARY|rel err' "$log" | tr '\n' ' '))"
    rm -f "$log"
  done
done
timeout 420 python3 bench/bench_fused_matmul.py --artifacts build/gpu --out "$OUT/bench.json" --commit "${COMMIT:-unknown}" 2>&1 | tee "$OUT/bench_log.txt" | tail -24
# Issue 14's layers (tests and benchmarks; also runs alone, see its header).
OUT="$OUT" bash bench/layers/run_layers_h200.sh
