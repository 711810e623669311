#!/usr/bin/env bash
# The small-M kernel (fusion-compile --small-m: a GEMM planned for a dynamic
# token count runs tiles of 64 columns where its 256-column tiles would
# leave most SMs idle) on the GPU, prepared by bench/layers/prepare_small_m.sh:
# Llama's pre-norm layer on both sides of the boundary against float64,
# compute-sanitizer at 16 tokens, the layer benchmark at 16 and 65536 tokens
# with and without the small-M kernel (the two-body kernel's main body must
# not lose at 65536) against torch.compile and cuBLAS's F.linear alone, the
# front end's 16-token call with the weights' folds kept, both ways, and the
# kept folds' GPU test.
#
#   COMMIT=abc OUT=$OUT bash bench/layers/run_small_m.sh [BUILD]
#
# About 6 minutes; each step has its own timeout and writes under OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
build=${1:-build}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
FRONTEND=$build/frontend-small-m
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
FUSION_GPU_ARTIFACTS=$build/gpu-small-m timeout 90 python3 -m pytest -v -s -rs \
  test/gpu/test_layers_gpu.py -k "small_m_kernel or (dynamic_token_count and llama and fused)" \
  > "$OUT/layers_small_m.txt" 2>&1
echo "== pytest small-M layers: exit $?"
grep -E "FAILED|Error|rel err" "$OUT/layers_small_m.txt" | cut -c1-160 | head -30
tail -n 1 "$OUT/layers_small_m.txt"
FUSION_GPU_ARTIFACTS=$build/gpu-small-m timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python3 test/gpu/run_one_layer.py llama_prenorm_h4096 16 > "$OUT/sanitize_memcheck_small_m.txt" 2>&1
echo "== memcheck llama_prenorm_h4096 16: exit $? ($(grep SUMMARY "$OUT/sanitize_memcheck_small_m.txt"))"
FUSION_GPU_ARTIFACTS=$build/gpu-small-m timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 \
  python3 test/gpu/run_one_layer.py llama_prenorm_h4096 300 > "$OUT/sanitize_racecheck_small_m.txt" 2>&1
echo "== racecheck llama_prenorm_h4096 300: exit $? ($(grep SUMMARY "$OUT/sanitize_racecheck_small_m.txt"))"
for m in 16 65536; do
  for v in small-m plain; do
    timeout 120 python3 bench/bench_layers.py --artifacts "$build/gpu-$v" --m $m \
      --kinds llama_prenorm,qwen3_q_norm --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048" --rounds 3 \
      --out "$OUT/bench_layers_llama_${m}_$v.json" --commit "${COMMIT:-unknown}" \
      > "$OUT/bench_layers_llama_${m}_$v.txt" 2>&1
    echo "== bench_layers.py $m tokens, $v: exit $?"
    sed -n '/^| /p' "$OUT/bench_layers_llama_${m}_$v.txt"
  done
done
for flags in "--small-m" "--no-small-m"; do
  tag=${flags#--}; tag=${tag//-/_}
  FUSION_COMPILE_FLAGS="$flags" timeout 90 python3 bench/frontend/bench_frontend.py --dir "$FRONTEND" \
    --tokens 16 --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048" \
    --json "$OUT/bench_frontend_decode16_$tag.json" --commit "${COMMIT:-unknown}" \
    > "$OUT/bench_frontend_decode16_$tag.txt" 2>&1
  echo "== bench_frontend.py 16 tokens $flags: exit $?"
  sed -n '/^| /p' "$OUT/bench_frontend_decode16_$tag.txt"
done
FUSION_COMPILE_FLAGS=--small-m FUSION_FRONTEND_DIR=$FRONTEND timeout 90 python3 -m pytest -v -s -rs \
  test/gpu/test_weight_folds_gpu.py > "$OUT/weight_folds_gpu.txt" 2>&1
echo "== test_weight_folds_gpu.py (small-M): exit $?"
grep -E "PASS|FAIL|Error|SKIP" "$OUT/weight_folds_gpu.txt" | cut -c1-160 | head -20
