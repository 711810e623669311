#!/usr/bin/env bash
# Session 50's device calls (carry build/gpu, built by
# `bash bench/build_gpu_artifacts.sh build`), each under ten minutes:
#   PART=verify: the GEMMs session 49's grouped tile order changed that had
#     not run with it: weight gradients (transpose_lhs, split-K, pairs), the
#     training steps' GEMMs, every layer; memcheck on a weight gradient with
#     a short last group;
#   PART=bench: the layers at 2048 / 4096, the training steps at 1024 / 2048
#     and the weight gradients timed against session 48's;
#   PART=ncu: the gated GEMM of llama_mlp_h4096 after the grouped order
#     (its DRAM throughput and L2 hit rate against 81% / 38% row-major);
#   PART=issue14: issue 14's bars after the norms' cache hints: every
#     standalone norm shape against torch.compile (build/ln-new/gpu, from
#     bench/layers/run_norm_cache_hints.sh's header), the Llama and BERT
#     layers at hidden 768 / 1024 (2048 / 4096: PART=bench), the host's
#     time per call.
# Writes $OUT/log_$PART.txt and JSON / ncu files beside it.
#
#   PART=verify C=<commit> OUT=$OUT bash bench/run_session50.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
A=build/gpu
export FUSION_GPU_ARTIFACTS=$A
. bench/layers/layer_checks.sh
part=${PART:-verify}
log=$OUT/log_$part.txt
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  if [ "$part" = verify ]; then
    echo "== weight gradients"
    timeout 150 python3 -m pytest -q test/gpu/test_weight_grad_gpu.py 2>&1 | tail -4
    echo "== training steps"
    timeout 200 python3 -m pytest -q test/gpu/test_train_step_gpu.py 2>&1 | tail -4
    echo "== layers"
    timeout 330 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py 2>&1 | tail -8
    sanitize_layer $A memcheck linear_wgrad_h4160 4097 /tmp/san_wgrad.txt
    grep -m3 -A10 "Invalid\|Error" /tmp/san_wgrad.txt | head -20
    tail -2 /tmp/san_wgrad.txt
  elif [ "$part" = bench ]; then
    timeout 300 python3 bench/bench_layers.py --artifacts $A --out "$OUT/layers.json" \
      --commit "${C:-unknown}" --kinds all --only 'h(2048|4096)' --rounds 2 2>&1 | grep "^|"
    timeout 150 python3 bench/bench_train_step.py --out "$OUT/train_step.json" --commit "${C:-unknown}" \
      --hs 1024,2048 --rounds 2 2>&1 | grep -v Warning | tail -10
    timeout 100 python3 bench/bench_weight_grad.py --out "$OUT/weight_grad.json" \
      --commit "${C:-unknown}" --rounds 2 2>&1 | grep -v Warning | tail -10
  elif [ "$part" = issue14 ]; then
    timeout 280 python3 bench/bench_norms.py --artifacts build/ln-new/gpu --out "$OUT/norms.json" \
      --commit "${C:-unknown}" 2>&1 | grep "^|"
    timeout 150 python3 bench/bench_layers.py --artifacts $A --out "$OUT/layers_small.json" \
      --commit "${C:-unknown}" --kinds llama_prenorm,bert_postnorm --only 'h(768|1024)$' \
      --rounds 2 2>&1 | grep "^|"
    timeout 100 python3 bench/call_overhead.py --artifacts $A --out "$OUT/call_overhead.json" \
      --commit "${C:-unknown}" 2>&1 | grep "^|"
  else
    OUT=$OUT KERNEL='kernel3$' NCU_SET=full bash bench/ncu_source.sh layer:llama_mlp_h4096
  fi
} >> "$log" 2>&1
ls -la "$OUT"
