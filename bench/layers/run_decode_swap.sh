#!/usr/bin/env bash
# The swapped decode body (fusion-compile --decode-swap, fusion.kernel_decode;
# session 42, built, not yet run on a GPU): calls of at most 32 tokens
# compute y^T = W x^T with the weight's 64-row slice as wgmma's A and the
# tokens as its N (m64n32k16), 18 stages of 8 KB of weight + 4 KB of tokens.
# Build here, with the same compiler, then on the device (carry build/decode):
#   l='^(llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048|ln_prenorm_h1024|llama_o_proj_h4096)(_unfused)?$'
#   ARTIFACTS=build/decode/plain/gpu bash bench/layers/build_layers.sh build "$l"
#   ARTIFACTS=build/decode/decode/gpu bash bench/layers/build_layers.sh build "$l" --decode-swap
#   C=abc OUT=$OUT bash bench/layers/run_decode_swap.sh build/decode
#   PART=65536 C=abc OUT=$OUT bash bench/layers/run_decode_swap.sh build/decode
# Prediction (H100, ncu at base clocks, 16 tokens): Llama's projection at
# hidden 4096 33.5 -> 15-18 us (64 CTAs, 144 KB of weight in flight each
# instead of 64), the bench_layers call (fold per call) 0.064 -> 0.046-0.050
# ms; Qwen3's q_proj + q_norm at 2048 14.7 -> 10-12 us (16 CTAs of one head,
# 11 stages of 16 KB of weight); Llama h1024 unchanged (no decode body: Lazy
# row sums in the kernel); 65536 tokens within 1% (the main body's code
# shares the kernel: the decode splits' cost 3-5% there, session 42).
# Two device calls: PART=check (the default: tests, sanitizers, ncu, the
# 16-token calls; or as two, PART=tests and PART=perf) and PART=65536.
set -u
export PYTHONUNBUFFERED=1
. bench/layers/layer_checks.sh
build=${1:-build/decode}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if [ "${PART:-check}" = 65536 ]; then
  for v in plain decode plain decode; do
    timeout 120 python3 bench/bench_layers.py --artifacts "$build/$v/gpu" --m 65536 \
      --kinds llama_prenorm,qwen3_q_norm --only "llama_prenorm_h4096|qwen3_q_norm_h2048" --rounds 2 \
      --out "$OUT/layers65536_$v.json" --commit "${C:-unknown}-$v" > "$OUT/layers65536_$v.txt" 2>&1
    echo "== bench_layers 65536 tokens $v: exit $?"; sed -n '/^| [a-z]/p' "$OUT/layers65536_$v.txt" | cut -d'|' -f2-4
  done
  exit 0
fi
part=${PART:-check}  # check = tests then perf
if [ "$part" != perf ]; then
for v in decode plain; do
  FUSION_GPU_ARTIFACTS=$build/$v/gpu timeout 150 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
    -k "decode_body or small_m_kernel" > "$OUT/layers_$v.txt" 2>&1
  echo "== pytest decode + small-M layers ($v): exit $? $(tail -n 1 "$OUT/layers_$v.txt")"
  grep -E "FAILED|rel err" "$OUT/layers_$v.txt" | grep -E "FAILED|M=(1|16|32|33):" | cut -c1-160 | head -12
done
for t in "memcheck llama_prenorm_h4096 16" "racecheck qwen3_q_norm_h2048 16" \
         "synccheck qwen3_q_norm_h2048 32" "memcheck ln_prenorm_h1024 31"; do
  set -- $t
  sanitize_layer "$build/decode/gpu" $1 $2 $3 "$OUT/san_$1_$2_$3.txt" decode
done
fi
[ "$part" = tests ] && exit 0
for v in plain decode; do
  for l in llama_prenorm_h4096 ln_prenorm_h1024 qwen3_q_norm_h2048; do
    ncu_kernel_times "$build/$v/gpu" $l 16 $v
  done
done
i=0
for v in plain decode plain decode; do i=$((i + 1))
  timeout 90 python3 bench/bench_layers.py --artifacts "$build/$v/gpu" --m 16 \
    --kinds llama_prenorm,ln_prenorm,qwen3_q_norm \
    --only "llama_prenorm_h(1024|4096)|ln_prenorm_h1024|qwen3_q_norm_h2048" --rounds 2 \
    --out "$OUT/layers16_$i-$v.json" --commit "${C:-unknown}-$v" > "$OUT/layers16_$i.txt" 2>&1
  echo "== bench_layers 16 tokens $i-$v: exit $?"; sed -n '/^| [a-z]/p' "$OUT/layers16_$i.txt" | cut -d'|' -f2-4
done
