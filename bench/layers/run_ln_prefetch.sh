#!/usr/bin/env bash
# The persistent, prefetching row kernel (fusion-compile --rows-prefetch,
# session 41, not yet run): the one-warp norm rows (RMSNorm / LayerNorm of
# 16-bit rows up to 1024 wide) on a persistent grid of 25 CTAs per SM, each
# loading its next row while it normalizes the current one, against the
# default one CTA per row. Built here with the same compiler:
#   r='^(rms_norm|layer_norm)(_infer)?_h(768|1024|1000|1001|4096)$'
#   ARTIFACTS=build/lnab/ln-main/gpu bash bench/layers/build_layers.sh build "$r"
#   ARTIFACTS=build/lnab/ln-pf/gpu bash bench/layers/build_layers.sh build "$r" --rows-prefetch
# Then on the device, carrying build/lnab:
#   C=abc OUT=$OUT bash bench/layers/run_ln_prefetch.sh build/lnab
# Prediction (session 41): LayerNorm inference 65536 x 1024 kernel 0.0920
# -> 0.0905-0.0912 ms on the H100 (Inductor's 0.0914), RMSNorm -0.5-1%,
# 262144 x 1024 within +-0.5%. (--rows-prefetch applies to the fused
# libraries; the _unfused ones of ln-pf are the default kernel.)
set -u
export PYTHONUNBUFFERED=1
build=${1:-build/lnab}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
FUSION_GPU_ARTIFACTS=$build/ln-pf/gpu timeout 120 python3 -m pytest -q -rs test/gpu/test_rows_gpu.py \
  -k "(rms_norm or layer_norm) and (h1024 or h768 or h1001 or h4096 or large_mean or consecutive)" \
  > "$OUT/rows_pf.txt" 2>&1
echo "== pytest rows (prefetch): $? $(tail -n 1 "$OUT/rows_pf.txt")"
grep -E "FAILED" "$OUT/rows_pf.txt" | head -8
for t in "memcheck layer_norm_h1024 4099" "racecheck rms_norm_h1024 4099" "memcheck rms_norm_h768 7"; do
  set -- $t
  FUSION_GPU_ARTIFACTS=$build/ln-pf/gpu timeout 60 compute-sanitizer --tool $1 --error-exitcode 9 \
    python3 test/gpu/run_one_layer.py $2 $3 > "$OUT/$1_$2.txt" 2>&1
  echo "== $1 $2 $3: $? $(grep SUMMARY "$OUT/$1_$2.txt")"
done
timeout 360 bash bench/layers/run_norm_variants_h200.sh "$OUT" "${C:-unknown}" \
  "${ONLY:-(layer_norm|rms_norm)(_infer)?_h1024_m}" \
  $build/ln-main/gpu $build/ln-pf/gpu $build/ln-main/gpu $build/ln-pf/gpu
