#!/usr/bin/env bash
# Session 50's device run: the norm row kernel's weight and bias loaded with
# Inductor's cache hints (ld.global.L1::evict_last.L2::cache_hint under an
# L2 evict_last policy) against main's plain loads (issue 14's last
# 0.4-0.7% at 65536 x 1024). Both built here by `ARTIFACTS=build/ln-<v>/gpu
# bench/layers/build_layers.sh build '^(rms|layer)_norm(_infer)?_h'`, old
# with main's compiler, new with the hinted one; carry build/ln-old and
# build/ln-new. Correctness (the row tests of the new kernels, memcheck),
# then old new old new.
#
#   C=abc OUT=$OUT bash bench/layers/run_norm_cache_hints.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
FUSION_GPU_ARTIFACTS=build/ln-new/gpu timeout 150 python3 -m pytest -q -rs test/gpu/test_rows_gpu.py \
  -k "norm" > "$OUT/rows_new.txt" 2>&1
echo "== pytest rows norm (new): $?"; tail -n 2 "$OUT/rows_new.txt"
grep -E "FAILED" "$OUT/rows_new.txt" | head -8
FUSION_GPU_ARTIFACTS=build/ln-new/gpu timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python3 test/gpu/run_one_layer.py layer_norm_h4096 4099 > "$OUT/memcheck_ln4096.txt" 2>&1
echo "== memcheck layer_norm_h4096 4099: $? $(grep SUMMARY "$OUT/memcheck_ln4096.txt")"
timeout 400 bash bench/layers/run_norm_variants_h200.sh "$OUT" "${C:-unknown}" \
  "${ONLY:-(layer|rms)_norm(_infer)?_h1024_m65536}" \
  build/ln-old/gpu build/ln-new/gpu build/ln-old/gpu build/ln-new/gpu
