#!/usr/bin/env bash
# The small-M body's consumer groups past M (session 42): a group whose rows
# all lie past M skips its MMAs, and the decode splits hand over only the
# rows inside M. Correctness (both sides of the small-M boundary, against
# float64), compute-sanitizer, the GEMM under ncu and bench_layers at 16
# tokens, against the artifacts of 03a9ab1 (BASE: plain, split). Built here:
#   l='^(llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048)(_unfused)?$'
#   ARTIFACTS=build/split2/plain/gpu bash bench/layers/build_layers.sh build "$l"
#   ARTIFACTS=build/split2/split/gpu bash bench/layers/build_layers.sh build "$l" --small-m-split
# On the device (carry both folders):
#   C=abc OUT=$OUT bash bench/layers/run_small_m_groups.sh build/split2 build/split
# Prediction (H100, ncu, 16 tokens): Qwen3's q_proj + q_norm 17.3 -> 10-12 us
# without splits (its 128-column tiles are bound by the MMAs of 128 rows,
# half of them now skipped), 16.4 -> 6-9 us with them (the hand-over 8x
# smaller); Llama h4096 33 -> 30-33 us plain (bound by the weight's loads),
# 25 -> 20-23 us split.
set -u
export PYTHONUNBUFFERED=1
new=${1:-build/split2}; base=${2:-build/split}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
for v in plain split; do
  FUSION_GPU_ARTIFACTS=$new/$v/gpu timeout 100 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
    -k "small_m_kernel or (dynamic_token_count and (llama or qwen3) and fused)" > "$OUT/layers_$v.txt" 2>&1
  echo "== pytest small-M layers (new $v): exit $? $(tail -n 1 "$OUT/layers_$v.txt")"
  grep -E "FAILED" "$OUT/layers_$v.txt" | cut -c1-200 | head -6
done
for t in "memcheck split qwen3_q_norm_h2048 16" "racecheck split llama_prenorm_h4096 16" \
         "synccheck plain qwen3_q_norm_h2048 16" "memcheck plain llama_prenorm_h4096 100"; do
  set -- $t
  FUSION_GPU_ARTIFACTS=$new/$2/gpu timeout 80 compute-sanitizer --tool $1 --error-exitcode 9 \
    python3 test/gpu/run_one_layer.py $3 $4 > "$OUT/san_$1_$2_$3_$4.txt" 2>&1
  echo "== $1 new $2 $3 $4: exit $? $(grep SUMMARY "$OUT/san_$1_$2_$3_$4.txt")"
done
for vv in base/plain new/plain base/split new/split; do
  d=$base; [ "${vv%/*}" = new ] && d=$new
  for l in llama_prenorm_h4096 qwen3_q_norm_h2048; do
    FUSION_GPU_ARTIFACTS=$d/${vv#*/}/gpu timeout 60 ncu --profile-from-start off --metrics gpu__time_duration.sum \
      python3 bench/layers/profile_layer.py $l 3 16 2>&1 | grep -E "_kernel[0-9] |gpu__time" | \
      awk '/kernel/{k=$1} /gpu__time/{printf "%s %s ", k, $3} END{print ""}' | sed "s|^|== ncu $vv $l 16: |"
  done
done
i=0
for vv in base/plain new/plain new/split; do i=$((i + 1))
  d=$base; [ "${vv%/*}" = new ] && d=$new
  timeout 80 python3 bench/bench_layers.py --artifacts "$d/${vv#*/}/gpu" --m 16 --kinds llama_prenorm,qwen3_q_norm \
    --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048" --rounds 3 \
    --out "$OUT/layers16_$i-${vv/\//-}.json" --commit "${C:-unknown}-${vv/\//-}" > "$OUT/layers16_$i.txt" 2>&1
  echo "== bench_layers 16 tokens $vv: exit $?"; sed -n '/^| [a-z]/p' "$OUT/layers16_$i.txt" | cut -d'|' -f2-8
done
