#!/usr/bin/env bash
# The small-M kernel (fusion.kernel_small_m: a GEMM planned for a dynamic
# token count runs tiles of 64 columns where its 256-column tiles would
# leave most SMs idle) on the GPU, in one short call: Llama's pre-norm layer
# on both sides of the boundary against float64, compute-sanitizer at 16
# tokens, the layer benchmark at 16 tokens (ours against torch.compile and
# cuBLAS's F.linear alone), the front end's 16-token call with the weights'
# folds kept, and the kept folds' GPU test. Prepared here by
#
#   ARTIFACTS=build/gpu bash bench/layers/build_layers.sh build '^llama_prenorm_h(1024|4096)$'
#   FUSION_TOOLS_DIR=build/bin python3 bench/frontend/bench_frontend.py \
#     --prepare build/frontend-small --only "llama_prenorm|qwen3_attention_inputs"
#
# (after `bench/build_gpu_artifacts.sh build cases` for the runtime), then on
# the device, carrying build/gpu and build/frontend-small:
#
#   COMMIT=abc OUT=$OUT FRONTEND=build/frontend-small bash bench/layers/run_small_m.sh build/gpu
#
# About 3.5 minutes; each step has its own timeout and writes under OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export FUSION_GPU_ARTIFACTS=${1:-build/gpu}
FRONTEND=${FRONTEND:-build/frontend-small}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 60 python3 -m pytest -v -s -rs test/gpu/test_layers_gpu.py \
  -k "small_m_kernel or (dynamic_token_count and llama and fused)" > "$OUT/layers_small_m.txt" 2>&1
echo "== pytest small-M layers: exit $?"
grep -E "FAILED|Error|rel err" "$OUT/layers_small_m.txt" | cut -c1-160 | head -30
tail -n 1 "$OUT/layers_small_m.txt"
timeout 60 python3 bench/bench_layers.py --m 16 --kinds llama_prenorm --only "h4096" --rounds 2 \
  --out "$OUT/bench_layers_llama_16.json" --commit "${COMMIT:-unknown}" \
  > "$OUT/bench_layers_llama_16_log.txt" 2>&1
echo "== bench_layers.py 16 tokens: exit $?"
sed -n '/^| /p' "$OUT/bench_layers_llama_16_log.txt"
timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python3 test/gpu/run_one_layer.py llama_prenorm_h4096 16 > "$OUT/sanitize_memcheck_small_m.txt" 2>&1
echo "== compute-sanitizer memcheck llama_prenorm_h4096 16: exit $? ($(grep -E 'SUMMARY' "$OUT/sanitize_memcheck_small_m.txt"))"
timeout 45 python3 bench/frontend/bench_frontend.py --dir "$FRONTEND" --tokens 16 \
  --only "llama_prenorm_h4096" --rounds 2 \
  --json "$OUT/bench_frontend_decode16.json" --commit "${COMMIT:-unknown}" \
  > "$OUT/bench_frontend_decode16_log.txt" 2>&1
echo "== bench_frontend.py 16 tokens: exit $?"
sed -n '/^| /p' "$OUT/bench_frontend_decode16_log.txt"
FUSION_FRONTEND_DIR=$FRONTEND timeout 40 python3 -m pytest -v -s -rs \
  test/gpu/test_weight_folds_gpu.py > "$OUT/weight_folds_gpu.txt" 2>&1
echo "== test_weight_folds_gpu.py: exit $?"
grep -E "PASS|FAIL|Error|SKIP" "$OUT/weight_folds_gpu.txt" | cut -c1-160 | head -20
