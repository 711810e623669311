#!/usr/bin/env bash
# Session 45's device runs (H100 or H200), in two calls of at most 10 minutes:
# CTA pairs for weight gradients (branch wgrad-pairs) and for the bias +
# residual epilogue (branch colbias-pairs), against main's kernels, and
# session 44's pairs through the layers' user-visible calls.
# Kept as run (bench/results/2026-12-06_session45_h100.txt); both branches
# are merged, so to repeat the A/B build 1a366d5 (before), 1b471f6 (weight
# gradients as pairs) and 63a8380 (and the bias + residual epilogue), e.g.
# git worktree add /tmp/wg 1b471f6 && cmake -G Ninja -S /tmp/wg -B /tmp/wg/build
# -DCMAKE_BUILD_TYPE=Release && ninja -C /tmp/wg/build; then here:
#   bash bench/run_session45.sh --prepare /tmp/base/build /tmp/wg/build /tmp/cb/build
# which makes build/mc and build/resid (run_multicast.sh, run_residual.sh),
# build/ts/{base,wg} (training steps and weight gradients by main's and
# wgrad-pairs' compilers) and build/resid2 (GPT-2's c_proj by colbias-pairs').
# Device: carry build/mc build/ts build/resid build/resid2;
#   PART=1 C=<commit> OUT=$OUT bash bench/run_session45.sh   (correctness, sanitizers, weight grads)
#   PART=2 C=<commit> OUT=$OUT bash bench/run_session45.sh   (timings)
set -uo pipefail
if [[ ${1:-} == --prepare ]]; then
  main=$2 wg=$3 cb=$4
  bash bench/gemm/run_multicast.sh --prepare "$main" > /dev/null || exit 1
  bash bench/layers/run_residual.sh --prepare "$main" > /dev/null || exit 1
  steps='^(train_step_(rms|ln)_h(1024|2048|4096)|linear_wgrad_h(1024|2048|4096|4160))$'
  rm -rf build/ts build/resid2 && mkdir -p build/ts/base build/ts/wg build/resid2/gpu
  ARTIFACTS=build/ts/base bash bench/layers/build_layers.sh "$main" "$steps" | tail -n 1
  ARTIFACTS=build/ts/wg bash bench/layers/build_layers.sh "$wg" "$steps" | tail -n 1
  cp -P "$cb"/lib/libfusion_runtime.so* build/resid2/gpu/
  python3 bench/gen_cases.py build/resid2/gpu --suite correctness > /dev/null
  "$cb/bin/fusion-compile" build/resid2/gpu/correctness.mlir -o build/resid2/gpu/libcorrectness.so || exit 1
  ARTIFACTS=build/resid2/gpu bash bench/layers/build_layers.sh "$cb" '^(gpt2_c_proj_h(768|1024|4096)|bert_postnorm_h(768|1024))$' | tail -n 1
  du -sh build/mc build/ts build/resid build/resid2
  exit 0
fi
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; C=${C:-unknown}; d=$(date +%F)
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
if [[ ${PART:-1} == 1 ]]; then
  PART=check OUT=$OUT bash bench/gemm/run_multicast.sh build
  for v in base wg; do
    FUSION_GPU_ARTIFACTS=build/ts/$v timeout 150 python3 -m pytest -q test/gpu/test_weight_grad_gpu.py > $OUT/wgrad_$v.txt 2>&1
    echo "== weight grads [$v]: exit $? $(tail -n 1 $OUT/wgrad_$v.txt)"; grep FAILED $OUT/wgrad_$v.txt | head -5
  done
  FUSION_GPU_ARTIFACTS=build/ts/wg timeout 200 python3 -m pytest -q test/gpu/test_train_step_gpu.py -k "h4096 or h1024" > $OUT/step_wg.txt 2>&1
  echo "== train steps h1024/h4096 [wg]: exit $? $(tail -n 1 $OUT/step_wg.txt)"; grep FAILED $OUT/step_wg.txt | head -5
  for v in "memcheck 4160 65536" "racecheck 4160 4097" "synccheck 4160 4097"; do set -- $v
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 env FUSION_GPU_ARTIFACTS=build/ts/wg python3 test/gpu/run_one_layer.py linear_wgrad_h$2 $3 > $OUT/san_wg_$1.txt 2>&1 &&
      true; echo "== $1 linear_wgrad_h$2 M=$3 [wg]: exit $? $(grep -E 'SUMMARY' $OUT/san_wg_$1.txt | tr '\n' ' ')"
  done
  FUSION_GPU_ARTIFACTS=build/resid2/gpu timeout 100 python3 -m pytest -q test/gpu/test_fused_matmul_gpu.py > $OUT/resid2_cases.txt 2>&1
  echo "== fused-GEMM cases [resid2]: exit $? $(tail -n 1 $OUT/resid2_cases.txt)"; grep FAILED $OUT/resid2_cases.txt | head -5
  FUSION_GPU_ARTIFACTS=build/resid2/gpu timeout 120 python3 -m pytest -q test/gpu/test_layers_gpu.py -k "(gpt2_c_proj or bert_postnorm) and not unfused" > $OUT/resid2.txt 2>&1
  echo "== gpt2_c_proj, bert_postnorm [resid2]: exit $? $(tail -n 1 $OUT/resid2.txt)"; grep FAILED $OUT/resid2.txt | head -5
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 env FUSION_GPU_ARTIFACTS=build/resid2/gpu python3 test/gpu/run_one_layer.py gpt2_c_proj_h4096 1001 > $OUT/san_resid2.txt 2>&1
  echo "== memcheck gpt2_c_proj_h4096 M=1001 [resid2]: exit $? $(grep SUMMARY $OUT/san_resid2.txt)"
  for v in base wg; do
    FUSION_GPU_ARTIFACTS=build/ts/$v timeout 100 python3 bench/bench_weight_grad.py --out $OUT/${d}_wgrad_$v.json --commit $C 2>&1 | grep -E "^\|"
  done
else
  PART=layers OUT=$OUT timeout 300 bash bench/gemm/run_multicast.sh build
  for v in resid resid2; do
    timeout 90 python3 bench/bench_layers.py --artifacts build/$v/gpu --m 65536 --kinds gpt2_c_proj --only '^gpt2_c_proj_h4096$' \
      --rounds 2 --out $OUT/${d}_c_proj_$v.json --commit $C 2>&1 | grep -E "^\|" | head -6
  done
  for v in base wg; do
    FUSION_GPU_ARTIFACTS=build/ts/$v timeout 150 python3 bench/bench_train_step.py --norms rms --hs 1024,4096 --baselines six_gemm \
      --out $OUT/${d}_step_$v.json --commit $C 2>&1 | grep -E "^\|"
  done
fi
