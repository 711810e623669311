#!/usr/bin/env bash
# Session 55's device calls: issue 16's and issue 17's bars measured as the
# user sees them (the whole call against torch.compile, in the same rounds),
# with session 54's RMSNorm weight fold (on by default) in every training
# step, and the fold's follow-up A/B.
#
# Here, first (about 4 minutes): `bash bench/run_session55.sh --prepare`
# builds, with this checkout's compiler,
#   build/v-fold2/gpu  every training step (default options),
#   build/v-nofold/gpu the RMSNorm steps at 1024-4096, --no-fold-norm-weight,
#   build/v-gr/gpu     the same, --max-epilogue-cluster 1 (the folded forward
#                      norm's rows through global memory on 132 SMs at 1024
#                      instead of a cluster of 4 on 120),
#   build/v-attn/gpu   the Kunlun blocks (forward, training step, backward)
#                      and the standalone gdpa,
#   build/frontend-training-gpu  the front end's libraries of fc1 ->
#                      LlamaRMSNorm -> fc2 (issue 16's step as a module) and
#                      Llama's pre-norm,
# each with a copy of the runtime. Carry all five; then on the device:
#   C=<commit> OUT=$OUT bash bench/run_session55.sh step   (issue 16, < 10 min)
#     1. test/gpu/test_train_step_gpu.py on v-fold2 against float64; the
#        front end's two modules against float64 and timed against
#        torch.compile (bench/frontend/bench_frontend_training.py);
#     2. memcheck on the folded train_step_rms_h256 (one CTA, split-K sum
#        with the column scale) and _h4096 (rows through global memory) at
#        4097 tokens;
#     3. bench/bench_train_step.py: RMSNorm and LayerNorm steps at
#        512-4096 against torch.compile and the six cuBLAS GEMMs
#        (v-nofold as a variant where built), 3 interleaved rounds.
#   C=<commit> OUT=$OUT bash bench/run_session55.sh attn   (issue 17 + A/B, < 10 min)
#     4. bench/bench_attention.py --only forward --only block_grad: the
#        Kunlun blocks' forward, training step and backward against
#        torch.compile;
#     5. bench/layers/step_spans.py: v-nofold against v-fold2 (and v-gr) at
#        1024, 2048 and 4096, profiler spans, 5 interleaved rounds.
#   C=<commit> OUT=$OUT bash bench/run_session55.sh auto   (< 10 min)
#     one call, whichever card comes: on an H200 3 (RMSNorm), 4 and the
#     RMSNorm steps' tests; on another card 1, 2 and 5 (3 rounds); then the
#     front end's two modules (tests and timing).
# Writes $OUT/log_<phase>.txt and JSON beside it.
set -uo pipefail
if [ "${1:-}" = --prepare ]; then
  build=${BUILD:-build}
  copy_runtime() {  # real files, not links: the carried folder runs alone
    for f in "$1"/libfusion_runtime.so*; do
      [ -L "$f" ] && cp --remove-destination "$(readlink -f "$f")" "$f"
    done
  }
  rm -rf "$build"/v-{fold2,nofold,gr,attn}
  ARTIFACTS=$build/v-fold2/gpu bash bench/layers/build_layers.sh "$build" \
    '^(train_step_(rms|ln)_h(768|1000|1024|2048|256|512|4096)|train_step_res_.*)$' || exit 1
  ARTIFACTS=$build/v-nofold/gpu bash bench/layers/build_layers.sh "$build" \
    '^train_step_rms_h(1024|2048|4096)$' --no-fold-norm-weight || exit 1
  ARTIFACTS=$build/v-gr/gpu bash bench/layers/build_layers.sh "$build" \
    '^train_step_rms_h(1024|2048|4096)$' --max-epilogue-cluster 1 || exit 1
  att=$build/v-attn/gpu/attention
  mkdir -p "$att"
  cp -P --remove-destination "$build"/lib/libfusion_runtime.so* "$build/v-attn/gpu/"
  python3 bench/attention/gen_attention.py "$build/v-attn/gpu" > /dev/null || exit 1
  for name in block_kunlun_h2 block_kunlun_h4 kunlun_train_h2 kunlun_train_h4 \
      kunlun_backward_h2 kunlun_backward_h4 gdpa_kunlun_h2 gdpa_kunlun_h4; do
    "$build/bin/fusion-compile" "$att/$name.mlir" -o "$att/lib$name.so" || exit 1
  done
  rm -rf "$build/frontend-training-gpu"
  FUSION_TOOLS_DIR=$build/bin ${PYTHON:-.venv/bin/python3} test/gpu/test_frontend_training_gpu.py \
    --prepare "$build/frontend-training-gpu" --only '^(linear_norm_linear|llama_prenorm)$' \
    > /dev/null || exit 1
  for d in v-fold2 v-nofold v-gr v-attn; do
    copy_runtime "$build/$d/gpu"
    rm -f "$build/$d"/gpu/layers/*_unfused.so
  done
  du -sh "$build"/v-{fold2,nofold,gr,attn} "$build/frontend-training-gpu"
  exit 0
fi
phase=${1:-step}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. bench/layers/layer_checks.sh
log=$OUT/log_$phase.txt
# The pieces; each phase runs a list of them (time limits in seconds from
# the variables named, defaults per phase below).
step_tests() {  # $1: the limit, then pytest's extra arguments
  local limit=$1; shift
  echo "== training steps (default: RMSNorm folded)"
  FUSION_GPU_ARTIFACTS=build/v-fold2/gpu timeout "$limit" python3 -m pytest -q -rs "$@" \
    test/gpu/test_train_step_gpu.py 2>&1 | tail -3
}
memchecks() {
  for p in train_step_rms_h256 train_step_rms_h4096; do
    sanitize_layer build/v-fold2/gpu memcheck $p 4097 /tmp/san_$p.txt
    tail -n1 /tmp/san_$p.txt
  done
}
bench_steps() {  # $1: the limit, $2: the norms (rms / ln), $3: the widths
  for norm in ${2//,/ }; do
    echo "== bench_train_step $norm"
    FUSION_GPU_ARTIFACTS=build/v-fold2/gpu timeout "$1" python3 bench/bench_train_step.py \
      --out "$OUT/train_step_$norm.json" --commit "${C:-unknown}" --norms $norm --hs "$3" \
      --baselines compile,six_gemm --variants nofold=build/v-nofold/gpu --rounds ${ROUNDS:-3} \
      2>&1 | grep -v Warn | tail -5
  done
}
attention() {  # $1: the limit
  echo "== the Kunlun blocks against torch.compile"
  FUSION_GPU_ARTIFACTS=build/v-attn/gpu timeout "$1" python3 bench/bench_attention.py \
    --only forward --only block_grad --rounds 3 --out "$OUT/attention.json" \
    --commit "${C:-unknown}" 2>&1 | grep -v Warn | tail -12
}
spans() {  # $1: the limit, $2: the rounds
  echo "== spans: --no-fold-norm-weight against the default and the global-memory rows"
  FUSION_GPU_ARTIFACTS=build/v-nofold/gpu timeout "$1" python3 bench/layers/step_spans.py \
    --out "$OUT/spans_fold.json" --commit "${C:-unknown}" \
    --programs ${SPANS:-train_step_rms_h1024,train_step_rms_h2048,train_step_rms_h4096} \
    --variants fold=build/v-fold2/gpu,gr=build/v-gr/gpu --rounds "$2" --calls 10 2>&1 \
    | grep -v Warn | tail -4
}
front_end() {  # $1, $2: the limits of the tests and of the timing
  [ -d build/frontend-training-gpu ] || return 0
  echo "== the front end: fc1 -> LlamaRMSNorm -> fc2 (the weight folded) and Llama's pre-norm"
  FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu timeout "$1" python3 -m pytest \
    -q -rs test/gpu/test_frontend_training_gpu.py -k "linear_norm_linear or llama_prenorm" 2>&1 | tail -3
  FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu timeout "$2" python3 \
    bench/frontend/bench_frontend_training.py --only '^(linear_norm_linear|llama_prenorm)$' \
    --json "$OUT/frontend_training.json" --commit "${C:-unknown}" 2>&1 | grep -v Warn | tail -4
}
{
  nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  case $phase in
    auto)
      # One call, whichever card comes: on an H200 the issues' bars first
      # (the steps and the blocks against torch.compile), then correctness;
      # on another card correctness first, then the A/B spans.
      if [[ $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) == *H200* ]]; then
        bench_steps ${BENCH_S:-230} rms ${HS:-1024,2048,4096}
        attention ${ATT_S:-200}
        step_tests ${STEPS_S:-100} -x -k rms
      else
        step_tests ${STEPS_S:-150}
        memchecks
        spans ${SPANS_S:-150} ${SROUNDS:-3}
      fi
      front_end ${FE_S:-60} ${FEB_S:-90} ;;
    step)
      step_tests ${STEPS_S:-150}
      memchecks
      front_end ${FE_S:-120} ${FEB_S:-120}
      bench_steps ${BENCH_S:-200} rms,ln ${HS:-512,1024,2048,4096} ;;
    *)
      attention ${ATT_S:-300}
      spans ${SPANS_S:-200} ${SROUNDS:-5} ;;
  esac
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
} > "$log" 2>&1
cat "$log"
