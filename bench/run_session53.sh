#!/usr/bin/env bash
# Session 53's device call (carry build/v-base and build/v-pf, built here by
#   ARTIFACTS=build/v-base/gpu bench/layers/build_layers.sh build REGEX
#   ARTIFACTS=build/v-pf/gpu bench/layers/build_layers.sh build REGEX --l2-prefetch-a
# with the runtime's symlinks replaced by copies; see HISTORY, session 53):
# the forward norm epilogue's producer prefetching the next tile's A into
# L2 (l2-prefetch-a), under ten minutes:
#   1. bench/layers/step_spans.py, v-base against v-pf in interleaved
#      rounds: the training steps' kernels (kernel0 is the forward GEMM with
#      the norm in its epilogue) and the post-norm layers' (BERT, a cluster
#      of 4 at 1024);
#   2. v-pf against float64: the training steps, the post-norm layers;
#      memcheck on a training step of 4097 tokens.
# Writes $OUT/log.txt and $OUT/spans.json (rewritten after each program).
# Time limits (s): SPANS_S (120), STEPS_S (100), LAYERS_S (50); MEMCHECK=0
# skips the memcheck; SPANS: the programs step_spans times.
#
#   C=<commit> OUT=$OUT bash bench/run_session53.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. bench/layers/layer_checks.sh
log=$OUT/log.txt
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  echo "== spans: v-base against v-pf"
  FUSION_GPU_ARTIFACTS=build/v-base/gpu timeout ${SPANS_S:-120} python3 bench/layers/step_spans.py \
    --out "$OUT/spans.json" --commit "${C:-unknown}" \
    --programs ${SPANS:-train_step_rms_h1024,bert_postnorm_h1024,train_step_ln_h1024,train_step_rms_h2048} \
    --variants pf=build/v-pf/gpu --rounds 3 --calls 10 2>&1 | grep -v Warn | tail -8
  echo "== training steps (v-pf)"
  FUSION_GPU_ARTIFACTS=build/v-pf/gpu timeout ${STEPS_S:-100} python3 -m pytest -q -x -rs \
    test/gpu/test_train_step_gpu.py -k "not h4096" 2>&1 | tail -3
  echo "== post-norm layers (v-pf)"
  FUSION_GPU_ARTIFACTS=build/v-pf/gpu timeout ${LAYERS_S:-50} python3 -m pytest -q -x -rs \
    test/gpu/test_layers_gpu.py -k "bert_postnorm or olmo2" 2>&1 | tail -3
  if [ "${MEMCHECK:-1}" = 1 ]; then
    sanitize_layer build/v-pf/gpu memcheck train_step_rms_h1024 4097 /tmp/san_mem.txt
    grep -m3 -A10 "Invalid\|Error" /tmp/san_mem.txt | head -20
  fi
} >> "$log" 2>&1
ls -la "$OUT"
