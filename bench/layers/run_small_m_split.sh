#!/usr/bin/env bash
# The small-M kernel's decode splits (fusion-compile --small-m-split,
# session 41; built, not yet run): correctness against float64 on both
# sides of the small-M boundary, compute-sanitizer (memcheck, racecheck,
# synccheck: range 0 waits on the other ranges' counters), the GEMM's time
# under ncu and bench_layers at 16 tokens, against the same layers without
# the flag. Built here, with the same compiler:
#   l='^(llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048)(_unfused)?$'
#   ARTIFACTS=build/split/plain/gpu bash bench/layers/build_layers.sh build "$l"
#   ARTIFACTS=build/split/split/gpu bash bench/layers/build_layers.sh build "$l" --small-m-split
# Then on the device, carrying build/split:
#   C=abc OUT=$OUT bash bench/layers/run_small_m_split.sh build/split
# Prediction (session 41, H100, ncu at base clocks): the 16-token GEMM at
# hidden 4096 33.5 -> ~18 us (128 CTAs), Qwen3's q_proj + q_norm at 2048
# 17.4 -> 5-7 us (64 CTAs), Llama at 1024 unchanged (its Lazy row sums in
# the kernel keep it unsplit); the 16-token calls 10-25% faster; 65536
# tokens unchanged (the main body, timed last).
set -uo pipefail
export PYTHONUNBUFFERED=1
. bench/layers/layer_checks.sh
build=${1:-build/split}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
FUSION_GPU_ARTIFACTS=$build/split/gpu timeout 120 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
  -k "small_m_kernel or (dynamic_token_count and (llama or qwen3) and fused)" > "$OUT/layers_split.txt" 2>&1
echo "== pytest small-M layers (split): exit $? $(tail -n 1 "$OUT/layers_split.txt")"
grep -E "FAILED" "$OUT/layers_split.txt" | cut -c1-160 | head -10
for t in "memcheck llama_prenorm_h4096 16" "racecheck llama_prenorm_h4096 16" \
         "synccheck qwen3_q_norm_h2048 16" "memcheck qwen3_q_norm_h2048 300"; do
  set -- $t
  sanitize_layer "$build/split/gpu" $1 $2 $3 "$OUT/$1_$2_$3.txt"
done
for v in plain split; do
  for l in llama_prenorm_h4096 qwen3_q_norm_h2048; do
    ncu_kernel_times "$build/$v/gpu" $l 16 $v
  done
done
i=0
for v in plain split plain split; do i=$((i + 1))
  timeout 100 python3 bench/bench_layers.py --artifacts "$build/$v/gpu" --m 16 --kinds llama_prenorm,qwen3_q_norm \
    --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048" --rounds 3 \
    --out "$OUT/layers16_$i-$v.json" --commit "${C:-unknown}-$v" > "$OUT/layers16_$i-$v.txt" 2>&1
  echo "== bench_layers 16 tokens $i-$v: exit $?"; sed -n '/^| [a-z]/p' "$OUT/layers16_$i-$v.txt"
done
# The main body at 65536 tokens: with --small-m-split every call also
# allocates a one-slot workspace, zeroes its counter and launches
# cooperatively; it must not cost there.
for v in plain split; do
  timeout 120 python3 bench/bench_layers.py --artifacts "$build/$v/gpu" --m 65536 --kinds llama_prenorm,qwen3_q_norm \
    --only "llama_prenorm_h4096|qwen3_q_norm_h2048" --rounds 2 \
    --out "$OUT/layers65536_$v.json" --commit "${C:-unknown}-$v" > "$OUT/layers65536_$v.txt" 2>&1
  echo "== bench_layers 65536 tokens $v: exit $?"; sed -n '/^| [a-z]/p' "$OUT/layers65536_$v.txt"
done
