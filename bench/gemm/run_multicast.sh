#!/usr/bin/env bash
# B's tiles multicast over a pair of CTAs along M (cluster_m = 2, on by
# default since session 44): correctness on the GPU, the sanitizers, an A/B
# against one CTA per tile (fusion-compile --no-multicast) with cuBLAS in
# the same rounds, and the layers' user-visible calls both ways.
#
# Here (no GPU; about three minutes):
#   bash bench/gemm/run_multicast.sh --prepare [BUILD]
# builds BUILD/mc: the correctness and benchmark suites and the layers by
# default (pairs); BUILD/mc/base: the benchmark suite with --no-multicast;
# BUILD/mc/one: the layers with --no-multicast.
# On the device (carry BUILD/mc), in calls of at most 10 minutes:
#   PART=check  C=<commit> OUT=$OUT bash bench/gemm/run_multicast.sh [BUILD]
#   PART=bench  C=<commit> OUT=$OUT bash bench/gemm/run_multicast.sh [BUILD]
#   PART=layers C=<commit> OUT=$OUT bash bench/gemm/run_multicast.sh [BUILD]
set -uo pipefail
if [[ ${1:-} == --prepare ]]; then
  build=${2:-build}
  out=$build/mc
  rm -rf "$out" && mkdir -p "$out/base" || exit 1
  cp -P "$build"/lib/libfusion_runtime.so* "$out/" && cp -P "$build"/lib/libfusion_runtime.so* "$out/base/"
  for suite in correctness bench; do
    python3 bench/gen_cases.py "$out" --suite "$suite" > /dev/null || exit 1
    "$build/bin/fusion-compile" "$out/$suite.mlir" -o "$out/lib$suite.so" || exit 1
  done
  python3 bench/gen_cases.py "$out/base" --suite bench > /dev/null || exit 1
  "$build/bin/fusion-compile" "$out/base/bench.mlir" -o "$out/base/libbench.so" --no-multicast || exit 1
  layers='^(llama_prenorm|llama_o_proj|gpt2_c_proj|qwen3_q_norm|bert_postnorm)_h'
  ARTIFACTS=$out bench/layers/build_layers.sh "$build" "$layers" || exit 1
  mkdir -p "$out/one"
  ARTIFACTS=$out/one bench/layers/build_layers.sh "$build" '^(llama_prenorm|llama_o_proj)_h' --no-multicast || exit 1
  du -sh "$out"
  exit 0
fi
build=${1:-build}
art=$build/mc
OUT=${OUT:-/tmp}
C=${C:-unknown}
date=$(date +%F)
export FUSION_GPU_ARTIFACTS=$art
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
if [[ ${PART:-check} == check ]]; then
  timeout 280 python3 -m pytest -q -x test/gpu/test_fused_matmul_gpu.py 2>&1 | tail -4
  timeout 200 python3 -m pytest -q test/gpu/test_layers_gpu.py \
    -k "(llama_prenorm or llama_o_proj or gpt2_c_proj or qwen3_q_norm or bert_postnorm) and not unfused" \
    2>&1 | tail -4
  for tool in memcheck racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 test/gpu/run_one_case.py mc_gemm_17019x128x256 > $OUT/sanitize_$tool.txt 2>&1
    echo "$tool mc_gemm_17019x128x256 exit $? $(grep -E 'ERROR SUMMARY|rel err' $OUT/sanitize_$tool.txt | tr '\n' ' ')"
  done
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    python3 test/gpu/run_one_case.py mc_lazy_rms_33333x1024x768 > $OUT/sanitize_lazy.txt 2>&1
  echo "memcheck mc_lazy_rms_33333x1024x768 exit $? $(grep -E 'ERROR SUMMARY|rel err' $OUT/sanitize_lazy.txt | tr '\n' ' ')"
elif [[ $PART == layers ]]; then
  # The user-visible call of Llama's pre-norm and o_proj + residual, pairs
  # and one CTA per tile, each against torch.compile in its own rounds.
  for side in mc one; do
    dir=$art; [[ $side == one ]] && dir=$art/one
    FUSION_GPU_ARTIFACTS=$dir python3 bench/bench_layers.py --artifacts $dir --kinds all \
      --only "${LAYERS:-^(llama_prenorm|llama_o_proj)_h(1024|4096)$}" --rounds 2 --commit "$C" \
      --out $OUT/${date}_multicast_layers_$side.json 2>&1 | grep -E "^\|" | head -20
  done
else
  python3 bench/gemm/ab_multicast.py --base $art/base --new $art --commit "$C" \
    --only "${BENCH:-^bench_(gemm_(1024|2048|4096)|gemm_nk_(1024|4096)|lazy_rms_(1024|4096))$}" \
    --rounds ${ROUNDS:-3} --out $OUT/${date}_multicast_ab.json
  # L2 -> SM traffic and the tensor pipe at base clocks, default and paired.
  metrics=gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size,launch__cluster_dim_x
  for side in ${NCU_SIDES:-base mc}; do
    dir=$art; [[ $side == base ]] && dir=$art/base
    FUSION_GPU_ARTIFACTS=$dir timeout 120 ncu --kernel-name regex:kernel0 --launch-skip 1 --launch-count 1 \
      --metrics $metrics python3 bench/profile_case.py ${NCU_CASE:-bench_gemm_4096} 2 > $OUT/ncu_$side.txt 2>&1
    echo "ncu $side exit $?"; grep -E "^ +(gpu__|lts__|sm__|dram__|launch__)" $OUT/ncu_$side.txt
  done
fi
