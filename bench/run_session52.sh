#!/usr/bin/env bash
# Session 52's device calls (carry build/gpu/layers, the runtime and the
# variant folders build/v-{s0,noside,s3}/gpu, built by
# bench/layers/build_layers.sh: see HISTORY, session 52), each under ten
# minutes:
#   PART=verify: the training steps, whose norm gradient beside the weight
#     gradient now stages its rows through shared memory (cp.async), and
#     every standalone norm gradient staged (build/v-s3/gpu,
#     --norm-grad-stages 3) against float64; the front end's training;
#     memcheck and racecheck on staged kernels;
#   PART=bench: the steps (HS, default 1024,768) against torch.compile and
#     six cuBLAS GEMMs, with the variants in the same rounds: s0 (side
#     kernels unstaged, session 51's), noside (no side kernels), s3 (every
#     norm gradient staged), and one call's kernel timeline each;
#   PART=spans: bench/layers/step_spans.py (the steps' kernels, and the side
#     pair's span, from the profiler, the folders interleaved) at 1024 and
#     768 for the default and the variants s0, noside, w2 and w2s0 (two
#     waves of the side norm gradient's CTAs instead of four, staged and
#     not: a build of a modified compiler, see HISTORY), then issue 17's
#     attention (bench_attention.py --only forward --only block_grad);
#   PART=final: the parameter sums on 8 columns a CTA (every norm
#     gradient's, the grad epilogues' and the attention backward's): the
#     training steps, the standalone norm gradients, the attention backward
#     and the front end's training against float64, memcheck; step_spans
#     against s0 (the previous sums); the front end's training steps timed
#     as the user sees them (bench/frontend/bench_frontend_training.py).
# Writes $OUT/log_$PART.txt and JSON files beside it.
#
#   PART=verify C=<commit> OUT=$OUT bash bench/run_session52.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
A=build/gpu
export FUSION_GPU_ARTIFACTS=$A
. bench/layers/layer_checks.sh
part=${PART:-verify}
log=$OUT/log_$part.txt
variants=s0=build/v-s0/gpu,noside=build/v-noside/gpu,s3=build/v-s3/gpu
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  if [ "$part" = verify ]; then
    echo "== training steps (side kernels staged)"
    timeout 170 python3 -m pytest -q -x -rs test/gpu/test_train_step_gpu.py 2>&1 | tail -4
    echo "== standalone norm gradients, all staged (v-s3)"
    FUSION_GPU_ARTIFACTS=build/v-s3/gpu timeout 120 python3 -m pytest -q -x -rs \
      test/gpu/test_norm_grads_gpu.py 2>&1 | tail -4
    echo "== training steps, every norm gradient staged (v-s3)"
    FUSION_GPU_ARTIFACTS=build/v-s3/gpu timeout 100 python3 -m pytest -q -x -rs \
      test/gpu/test_train_step_gpu.py 2>&1 | tail -4
    echo "== front-end training"
    FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu timeout 150 \
      python3 -m pytest -q -x -rs test/gpu/test_frontend_training_gpu.py 2>&1 | tail -4
    sanitize_layer $A memcheck train_step_rms_h1024 4097 /tmp/san_mem.txt
    grep -m3 -A10 "Invalid\|Error" /tmp/san_mem.txt | head -20
    sanitize_layer build/v-s3/gpu racecheck layer_norm_grad_h1000 4097 /tmp/san_race.txt
    grep -m3 -A10 "Invalid\|Error\|hazard" /tmp/san_race.txt | head -20
    sanitize_layer build/v-s3/gpu memcheck rms_norm_grad_h1024 7 /tmp/san_mem2.txt
    grep -m3 -A10 "Invalid\|Error" /tmp/san_mem2.txt | head -20
  elif [ "$part" = final ]; then
    echo "== training steps"
    timeout 100 python3 -m pytest -q -x -rs test/gpu/test_train_step_gpu.py 2>&1 | tail -2
    echo "== standalone norm gradients"
    timeout 80 python3 -m pytest -q -x -rs test/gpu/test_norm_grads_gpu.py 2>&1 | tail -2
    echo "== attention backward (the RMSNorm weight's sums)"
    timeout 120 python3 -m pytest -q -x -rs test/gpu/test_attention_grad_gpu.py \
      test/gpu/test_attention_block_grad_gpu.py 2>&1 | tail -2
    echo "== front-end training"
    FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu timeout 100 \
      python3 -m pytest -q -x -rs test/gpu/test_frontend_training_gpu.py 2>&1 | tail -2
    sanitize_layer $A memcheck rms_norm_grad_h1024 4097 /tmp/san_mem.txt
    grep -m3 -A10 "Invalid\|Error" /tmp/san_mem.txt | head -20
    timeout 120 python3 bench/layers/step_spans.py --out "$OUT/spans.json" --commit "${C:-unknown}" \
      --programs train_step_rms_h1024,train_step_ln_h1024,train_step_rms_h768,train_step_rms_h2048 \
      --variants s0=build/v-s0/gpu,noside=build/v-noside/gpu --rounds 3 --calls 10 2>&1 | grep -v Warn | tail -5
    FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu timeout 150 \
      python3 bench/frontend/bench_frontend_training.py --json "$OUT/frontend_training.json" \
      --commit "${C:-unknown}" --rounds 2 2>&1 | grep -v Warn | tail -14
  elif [ "$part" = spans ]; then
    echo "== training steps of v-g (staged, g kept from the first pass)"
    FUSION_GPU_ARTIFACTS=build/v-g/gpu timeout 60 python3 -m pytest -q -x -rs \
      test/gpu/test_train_step_gpu.py 2>&1 | tail -2
    timeout 240 python3 bench/layers/step_spans.py --out "$OUT/spans.json" --commit "${C:-unknown}" \
      --programs train_step_rms_h1024,train_step_ln_h1024,train_step_rms_h768,train_step_ln_h768 \
      --variants s0=build/v-s0/gpu,noside=build/v-noside/gpu,w2=build/v-w2/gpu,g=build/v-g/gpu \
      --rounds 3 --calls 10 2>&1 | grep -v Warn | tail -8
    timeout 300 python3 bench/bench_attention.py --out "$OUT/attention.json" --commit "${C:-unknown}" \
      --rounds 2 --only forward --only block_grad 2>&1 | grep -v Warn | tail -16
  else
    timeout 540 python3 bench/bench_train_step.py --out "$OUT/train_step.json" --commit "${C:-unknown}" \
      --hs ${HS:-1024,768} --norms rms,ln --rounds 2 --baselines compile,six_gemm \
      --variants "$variants" --timeline 2>&1 | grep -v Warning | tail -40
  fi
} >> "$log" 2>&1
ls -la "$OUT"
