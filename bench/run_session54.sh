#!/usr/bin/env bash
# Session 54's pending device call: the RMSNorm weight fold
# (fusion-fold-norm-weight, on by default since d129ae8) on every training
# step and at the widths its first run left undecided, under five minutes:
#   1. test/gpu/test_train_step_gpu.py on the default build (the steps of
#      RMSNorm folded at 256-4096, LayerNorm and the residual blocks as
#      before) against float64;
#   2. memcheck on the folded train_step_rms_h256 (one-CTA epilogue, split-K
#      sum with the column scale) and _h4096 (rows through global memory) at
#      4097 tokens;
#   3. bench/layers/step_spans.py, --no-fold-norm-weight against the default,
#      at 2048 and 4096 (session 54's run at 2048 drifted by 3-5% between
#      folders) and 1024, 5 interleaved rounds; with GR=1 also v-gr (the
#      1024-column forward norm through global memory on 132 SMs instead of
#      a cluster of 4 on 120; at 2048 and 4096 v-fold2's code again, which
#      measures the noise between folders);
#   4. where build/v-attn was carried too (session 53's --prepare), the
#      Kunlun blocks' forward against torch.compile (bench/attention/
#      ab_block.py): on an H200, issue 17's forward bar (H 2 ran at 0.200 ms
#      on an H100 in session 54).
# Here, first (about 2 minutes): `bash bench/run_session54.sh --prepare`
# builds build/v-fold2/gpu (the training steps, default options),
# build/v-nofold/gpu (RMSNorm steps at 1024-4096, --no-fold-norm-weight) and
# build/v-gr/gpu (the same, --max-epilogue-cluster 1).
# Carry build/v-fold2, build/v-nofold (build/v-gr with GR=1, build/v-attn
# for 4); then on the device:
#   C=<commit> OUT=$OUT bash bench/run_session54.sh
# Writes $OUT/log.txt, $OUT/spans_fold_big.json (and $OUT/ab_block.json).
set -uo pipefail
if [ "${1:-}" = --prepare ]; then
  build=${BUILD:-build}
  copy_runtime() {  # real files, not links: the carried folder runs alone
    for f in "$1"/libfusion_runtime.so*; do
      [ -L "$f" ] && cp --remove-destination "$(readlink -f "$f")" "$f"
    done
  }
  rm -rf "$build/v-fold2" "$build/v-nofold"
  ARTIFACTS=$build/v-fold2/gpu bash bench/layers/build_layers.sh "$build" \
    '^(train_step_(rms|ln)_h(768|1000|1024|2048|256|512|4096)|train_step_res_.*)$' || exit 1
  ARTIFACTS=$build/v-nofold/gpu bash bench/layers/build_layers.sh "$build" \
    '^train_step_rms_h(1024|2048|4096)$' --no-fold-norm-weight || exit 1
  # The folded forward norm of 1024 columns through global memory (132 SMs)
  # instead of a cluster of 4 (120); at 2048 and 4096 the same kernels as
  # v-fold2 (rows of more than 4 CTAs go through global memory anyway): the
  # rounds' noise between two folders of identical code.
  ARTIFACTS=$build/v-gr/gpu bash bench/layers/build_layers.sh "$build" \
    '^train_step_rms_h(1024|2048|4096)$' --max-epilogue-cluster 1 || exit 1
  for d in v-fold2 v-nofold v-gr; do
    copy_runtime "$build/$d/gpu"
    rm -f "$build/$d"/gpu/layers/*_unfused.so
  done
  du -sh "$build"/v-{fold2,nofold,gr}
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. bench/layers/layer_checks.sh
{
  nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  echo "== training steps (default: RMSNorm folded)"
  FUSION_GPU_ARTIFACTS=build/v-fold2/gpu timeout ${STEPS_S:-150} python3 -m pytest -q -rs \
    test/gpu/test_train_step_gpu.py 2>&1 | tail -3
  for p in train_step_rms_h256 train_step_rms_h4096; do
    sanitize_layer build/v-fold2/gpu memcheck $p 4097 /tmp/san_$p.txt
    tail -n1 /tmp/san_$p.txt
  done
  echo "== spans: --no-fold-norm-weight against the default"
  FUSION_GPU_ARTIFACTS=build/v-nofold/gpu timeout ${SPANS_S:-200} python3 bench/layers/step_spans.py \
    --out "$OUT/spans_fold_big.json" --commit "${C:-unknown}" \
    --programs ${SPANS:-train_step_rms_h2048,train_step_rms_h4096,train_step_rms_h1024} \
    --variants fold=build/v-fold2/gpu${GR:+,gr=build/v-gr/gpu} --rounds ${ROUNDS:-5} --calls 10 2>&1 | grep -v Warn | tail -4
  if [ -d build/v-attn/gpu/attention ]; then
    echo "== the Kunlun blocks' forward (and session 52's, _base)"
    FUSION_GPU_ARTIFACTS=build/v-attn/gpu timeout ${AB_S:-120} python3 bench/attention/ab_block.py \
      --variants ,_base --rounds 3 --out "$OUT/ab_block.json" --commit "${C:-unknown}" 2>&1 \
      | grep -v Warn | tail -4
  fi
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
} > "$OUT/log.txt" 2>&1
cat "$OUT/log.txt"
