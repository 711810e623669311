#!/usr/bin/env bash
# Session 40's device run: LayerNorm's one-pass statistics (commit 97bd34a)
# against the two-pass row kernel before it (592aa64), built here into
# BUILD/ln-new/gpu and BUILD/ln-old/gpu by `ARTIFACTS=...
# bench/layers/build_layers.sh build '^(rms|layer)_norm(_infer)?_h'` (once
# with each commit's compiler), then, where
# BUILD/gpu-small-m exists (bench/layers/prepare_small_m.sh), the small-M
# kernel's correctness and memcheck.
#
#   C=abc OUT=$OUT bash bench/layers/run_ln_moments.sh [BUILD]
#
# ONLY (default 'layer_norm(_infer)?_h1024_m', matched against NAME_mM) picks
# the benchmarked norms.
# Session 41 ran it again for the uncentered output (x rstd + shift) against
# main's kernel, with ONLY='layer_norm(_infer)?_h(1024|4096)_m'.
#
# About 8 minutes; each step has its own timeout.
set -u
export PYTHONUNBUFFERED=1
build=${1:-build}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
FUSION_GPU_ARTIFACTS=$build/ln-new/gpu timeout 120 python3 -m pytest -q -rs test/gpu/test_rows_gpu.py \
  -k "layer_norm and (large_mean or 1024 or 4096 or 768)" > "$OUT/rows_ln_new.txt" 2>&1
echo "== pytest rows layer_norm (new): $?"; tail -n 2 "$OUT/rows_ln_new.txt"
grep -E "FAILED" "$OUT/rows_ln_new.txt" | head -8
for tool in memcheck racecheck; do
  FUSION_GPU_ARTIFACTS=$build/ln-new/gpu timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 test/gpu/run_one_layer.py layer_norm_h4096 4099 > "$OUT/${tool}_ln4096.txt" 2>&1
  echo "== $tool layer_norm_h4096 4099: $? $(grep SUMMARY "$OUT/${tool}_ln4096.txt")"
done
timeout 360 bash bench/layers/run_norm_variants_h200.sh "$OUT" "${C:-unknown}" "${ONLY:-layer_norm(_infer)?_h1024_m}" \
  $build/ln-old/gpu $build/ln-new/gpu $build/ln-old/gpu $build/ln-new/gpu
if [ -d "$build/gpu-small-m" ]; then
  FUSION_GPU_ARTIFACTS=$build/gpu-small-m timeout 100 python3 -m pytest -q -rs \
    test/gpu/test_layers_gpu.py -k "small_m_kernel" > "$OUT/layers_small_m.txt" 2>&1
  echo "== pytest small-M layers: exit $?"; tail -n 1 "$OUT/layers_small_m.txt"
  grep -E "FAILED" "$OUT/layers_small_m.txt" | cut -c1-160 | head -10
  FUSION_GPU_ARTIFACTS=$build/gpu-small-m timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    python3 test/gpu/run_one_layer.py llama_prenorm_h4096 16 > "$OUT/memcheck_small_m.txt" 2>&1
  echo "== memcheck llama_prenorm_h4096 16: $? $(grep SUMMARY "$OUT/memcheck_small_m.txt")"
fi
