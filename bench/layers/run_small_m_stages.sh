#!/usr/bin/env bash
# Session 41's device run: the small-M kernel's deeper ring (up to
# kSmallMMaxStages, 8 stages at tiles of 64 columns) against the 6-stage
# one, at decode sizes. Built here:
#   OLD (default build/gpu-small-m, and build/frontend-small-m): the 6-stage
#     libraries of bench/layers/prepare_small_m.sh before the change;
#   NEW (default build/sm8): ARTIFACTS=NEW/gpu bench/layers/build_layers.sh
#     build '^(llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048)(_unfused)?$'
#     and bench_frontend.py --prepare NEW/frontend --only
#     'llama_prenorm|qwen3_q_norm_h2048|qwen3_attention_inputs'.
# Correctness and sanitizers on NEW, the GEMM's kernel time under ncu (both),
# bench_layers at 16 tokens in the order old new old new, the front end's
# 16-token calls both ways, and 65536 tokens once each (the main body).
#
#   COMMIT=abc OUT=$OUT bash bench/layers/run_small_m_stages.sh [OLD NEW OLD_FRONTEND]
set -uo pipefail
export PYTHONUNBUFFERED=1
old=${1:-build/gpu-small-m} new=${2:-build/sm8} oldfe=${3:-build/frontend-small-m}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; log=$OUT/run.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
FUSION_GPU_ARTIFACTS=$new/gpu timeout 90 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
  -k "small_m_kernel or (dynamic_token_count and llama and fused)" > "$OUT/layers_small_m.txt" 2>&1
echo "== pytest small-M layers (new): exit $? $(tail -n 1 "$OUT/layers_small_m.txt")"
grep -E "FAILED" "$OUT/layers_small_m.txt" | cut -c1-160 | head -10
for t in "memcheck 16" "racecheck 300"; do set -- $t
  FUSION_GPU_ARTIFACTS=$new/gpu timeout 60 compute-sanitizer --tool $1 --error-exitcode 9 \
    python3 test/gpu/run_one_layer.py llama_prenorm_h4096 $2 > "$OUT/$1.txt" 2>&1
  echo "== $1 llama_prenorm_h4096 $2: exit $? $(grep SUMMARY "$OUT/$1.txt")"
done
for d in "old $old" "new $new/gpu"; do set -- $d
  for l in llama_prenorm_h4096 llama_prenorm_h1024; do
    FUSION_GPU_ARTIFACTS=$2 timeout 60 ncu --profile-from-start off --metrics gpu__time_duration.sum \
      python3 bench/layers/profile_layer.py $l 3 16 2>&1 | grep -E "_kernel[0-9] |gpu__time" | \
      awk '/kernel/{k=$1} /gpu__time/{printf "%s %s ", k, $3} END{print ""}' | sed "s/^/== ncu $1 $l 16: /"
  done
done
i=0
for d in "old $old" "new $new/gpu" "old $old" "new $new/gpu"; do set -- $d; i=$((i + 1))
  timeout 100 python3 bench/bench_layers.py --artifacts "$2" --m 16 --kinds llama_prenorm,qwen3_q_norm \
    --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048" --rounds 3 \
    --out "$OUT/layers16_$i-$1.json" --commit "${COMMIT:-unknown}-$1" > "$OUT/layers16_$i-$1.txt" 2>&1
  echo "== bench_layers 16 tokens $i-$1: exit $?"; sed -n '/^| [a-z]/p' "$OUT/layers16_$i-$1.txt"
done
# (OLD_FRONTEND was prepared with --small-m's flag in its libraries' keys,
# NEW's with the default flags: each is called as it was prepared.)
for d in "old $oldfe --small-m" "new $new/frontend"; do set -- $d
  FUSION_COMPILE_FLAGS=${3:-} timeout 120 python3 bench/frontend/bench_frontend.py --dir "$2" --tokens 16 \
    --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048|qwen3_attention_inputs_h4096" \
    --json "$OUT/frontend16_$1.json" --commit "${COMMIT:-unknown}-$1" > "$OUT/frontend16_$1.txt" 2>&1
  echo "== bench_frontend 16 tokens $1: exit $?"; sed -n '/^| [a-z]/p' "$OUT/frontend16_$1.txt"
done
FUSION_FRONTEND_DIR=$new/frontend timeout 90 python3 -m pytest -q -rs test/gpu/test_weight_folds_gpu.py \
  > "$OUT/weight_folds.txt" 2>&1
echo "== test_weight_folds_gpu.py (new): exit $? $(tail -n 1 "$OUT/weight_folds.txt")"
