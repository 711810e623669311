#!/usr/bin/env bash
# Session 51's device calls (carry build/gpu and build/side-{off,0}/gpu,
# built by bench/layers/build_layers.sh: see HISTORY, session 51), each
# under ten minutes:
#   PART=verify: the training steps with their norm gradients on a side
#     stream beside the weight gradient (fusion.side_kernel): the float64
#     tests, the front end's training (build/frontend-training-gpu, whose
#     backward programs pair them too), memcheck on one step;
#   PART=bench: the steps at 512 / 1024 / 2048 against torch.compile and
#     six cuBLAS GEMMs, with the variant without side kernels in
#     the same rounds, and one call's kernel timeline each.
# Writes $OUT/log_$PART.txt and JSON files beside it.
#
#   PART=verify C=<commit> OUT=$OUT bash bench/run_session51.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
A=build/gpu
export FUSION_GPU_ARTIFACTS=$A
. bench/layers/layer_checks.sh
part=${PART:-verify}
log=$OUT/log_$part.txt
variants=off=build/side-off/gpu
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  if [ "$part" = verify ]; then
    echo "== training steps"
    timeout 200 python3 -m pytest -q -x -rs test/gpu/test_train_step_gpu.py 2>&1 | tail -6
    echo "== front-end training (side kernels in 5 backward programs)"
    FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu timeout 170 \
      python3 -m pytest -q -x -rs test/gpu/test_frontend_training_gpu.py 2>&1 | tail -6
    sanitize_layer $A memcheck train_step_rms_h1024 4097 /tmp/san_mem.txt
    grep -m3 -A10 "Invalid\|Error" /tmp/san_mem.txt | head -20
  else
    timeout 520 python3 bench/bench_train_step.py --out "$OUT/train_step.json" --commit "${C:-unknown}" \
      --hs ${HS:-1024,2048,512} --norms rms,ln --rounds 2 --baselines compile,six_gemm \
      --variants "$variants" --timeline 2>&1 | grep -v Warning | tail -40
  fi
} >> "$log" 2>&1
ls -la "$OUT"
