#!/usr/bin/env bash
# Session 53's device call: A/B of two changes against the kernels of
# session 52 (HISTORY, session 53), under ten minutes:
#   - widening: bf16 pairs widened to f32 by one integer op or byte permute
#     an element instead of cvt.f32.bf16 (the norm gradients' loop 318 -> 292
#     SASS instructions at H 1024, the FlashNormAttention forward's 2233 ->
#     2118 at H 2); bitwise the same values;
#   - l2-prefetch-a: the forward norm epilogue's producer prefetching the
#     next tile's A into L2 (fusion-compile --l2-prefetch-a; off by default).
#
# Here, first (about 4 minutes): `bash bench/run_session53.sh --prepare`
# builds, with this checkout's compiler,
#   build/v-new/gpu  the training steps and post-norm layers (default options),
#   build/v-pf/gpu   the same with --l2-prefetch-a,
#   build/v-attn/gpu/attention  the Kunlun blocks (lib<name>.so) beside
#                    session 52's (lib<name>_base.so: copied from
#                    build/gpu/attention in session 53 and kept since),
# each with a copy of the runtime. build/v-base/gpu (the same programs from
# session 52's compiler, fc36f4f) was built in session 53 and is kept.
# Carry build/v-base, build/v-new, build/v-pf, build/v-attn; then on the
# device:
#   1. bench/layers/step_spans.py, v-base against v-new and v-pf in
#      interleaved rounds: every kernel of the training steps (kernel0, the
#      forward GEMM with the norm in its epilogue; kernel4, the norm
#      gradient beside the weight gradient) and of the BERT post-norm;
#   2. bench/attention/ab_block.py: the blocks' forward, new against _base;
#   3. v-pf against float64: the training steps, the post-norm layers;
#      memcheck on a training step of 4097 tokens (MEMCHECK=0 skips it).
# Writes $OUT/log.txt, $OUT/spans.json, $OUT/ab_block.json.
# Time limits (s): SPANS_S (150), AB_S (120), STEPS_S (100), LAYERS_S (50).
#
#   C=<commit> OUT=$OUT bash bench/run_session53.sh
set -uo pipefail
if [ "${1:-}" = --prepare ]; then
  build=${BUILD:-build}
  steps='^(train_step_(rms|ln)_h(768|1000|1024|2048|256|512|4096)|train_step_res_.*|bert_postnorm.*|olmo2_post.*)$'
  copy_runtime() {  # real files, not links: the carried folder runs alone
    for f in "$1"/libfusion_runtime.so*; do
      [ -L "$f" ] && cp --remove-destination "$(readlink -f "$f")" "$f"
    done
  }
  # The blocks' _base libraries (session 52's kernels) are kept where an
  # earlier --prepare copied them: build/gpu/attention may hold newer ones.
  rm -rf "$build/v-new" "$build/v-pf"
  ARTIFACTS=$build/v-new/gpu bash bench/layers/build_layers.sh "$build" "$steps" || exit 1
  ARTIFACTS=$build/v-pf/gpu bash bench/layers/build_layers.sh "$build" "$steps" --l2-prefetch-a || exit 1
  rm -f "$build"/v-{new,pf}/gpu/layers/*_unfused.so
  mkdir -p "$build/v-attn/gpu/attention"
  cp -P --remove-destination "$build"/lib/libfusion_runtime.so* "$build/v-attn/gpu/"
  python3 bench/attention/gen_attention.py "$build/v-attn/gpu" > /dev/null || exit 1
  for name in block_kunlun_h2 block_kunlun_h4; do
    base=$build/v-attn/gpu/attention/lib${name}_base.so
    [ -f "$base" ] || cp "$build/gpu/attention/lib$name.so" "$base" || exit 1
    "$build/bin/fusion-compile" "$build/v-attn/gpu/attention/$name.mlir" \
      -o "$build/v-attn/gpu/attention/lib$name.so" || exit 1
  done
  for d in v-new v-pf v-attn; do copy_runtime "$build/$d/gpu"; done
  [ -d "$build/v-base/gpu/layers" ] || echo "run_session53: warning: no $build/v-base (session 52's kernels)"
  du -sh "$build"/v-{base,new,pf,attn}
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. bench/layers/layer_checks.sh
log=$OUT/log.txt
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  echo "== spans: v-base against v-new and v-pf"
  FUSION_GPU_ARTIFACTS=build/v-base/gpu timeout ${SPANS_S:-150} python3 bench/layers/step_spans.py \
    --out "$OUT/spans.json" --commit "${C:-unknown}" \
    --programs ${SPANS:-train_step_rms_h1024,train_step_ln_h1024,bert_postnorm_h1024,train_step_rms_h2048} \
    --variants new=build/v-new/gpu,pf=build/v-pf/gpu --rounds 3 --calls 10 2>&1 | grep -v Warn | tail -8
  echo "== the Kunlun blocks' forward: new against _base"
  FUSION_GPU_ARTIFACTS=build/v-attn/gpu timeout ${AB_S:-120} python3 bench/attention/ab_block.py \
    --variants ,_base --rounds 3 --out "$OUT/ab_block.json" --commit "${C:-unknown}" 2>&1 \
    | grep -v Warn | tail -8
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
