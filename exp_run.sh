#!/usr/bin/env bash
set -uo pipefail
export PYTHONUNBUFFERED=1 FUSION_GPU_ARTIFACTS=build/gpu
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 240 python3 -m pytest -v -s test/gpu/test_fused_matmul_gpu.py > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; grep -E "FAIL|Error|passed|failed" "$OUT/gpu_tests.txt" | tail -5
grep -E "cluster" "$OUT/gpu_tests.txt" | grep "rel err" | head -12
for c in ln_epi_cluster4_n1024 ln_epi_cluster3_n576 rms_epi_cluster2_n512 lazy_rms_ln_cluster4_nk; do
  for t in memcheck racecheck synccheck; do
    log=$(mktemp)
    timeout 100 compute-sanitizer --tool $t --error-exitcode 9 python3 test/gpu/run_one_case.py $c > "$log" 2>&1
    s=$?
    { echo "== $t $c: exit $s"; cat "$log"; } >> "$OUT/sanitizer.txt"
    echo "$t $c: exit $s ($(grep -E 'SUMMARY' "$log" | tr '\n' ' '))"
    rm -f "$log"
  done
done
ONLY='bench_(gemm|rms_epi|ln_epi)_(256|512|1024)$|ln_epi_full_1024|ln_epi_(residual|affine|stats)_1024'
timeout 240 python3 bench/bench_fused_matmul.py --artifacts build/gpu --out "$OUT/bench.json" --commit bb5f8d8 --only "$ONLY" --rounds 3 2>&1 | tail -14
