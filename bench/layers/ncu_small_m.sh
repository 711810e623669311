#!/usr/bin/env bash
# Where the small-M (decode) GEMM's time goes: ncu's launch, occupancy,
# speed-of-light, warp-state and source sections for the 16-token GEMM of
# Llama's pre-norm (hidden 4096) and Qwen3's q_proj + q_norm (2048), without
# and with --small-m-split (built by bench/layers/build_layers.sh as run_small_m_split.sh says).
#   OUT=$OUT bash bench/layers/ncu_small_m.sh build/split
set -u
build=${1:-build/split}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for v in plain split; do
  for lk in llama_prenorm_h4096:kernel2 qwen3_q_norm_h2048:kernel0; do
    l=${lk%%:*}; k=${lk#*:}
    f="$OUT/ncu_${v}_$l.txt"
    FUSION_GPU_ARTIFACTS=$build/$v/gpu timeout 120 ncu --profile-from-start off -k "regex:${l}_$k\$" -c 1 \
      --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters \
      python3 bench/layers/profile_layer.py "$l" 1 16 > "$f" 2>&1
    echo "== $v $l 16 tokens ($k): exit $?"
    grep -E "^\s+(Duration|Grid Size|Registers Per|Dynamic Shared|Waves Per|Achieved Occupancy|Memory Throughput|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps)" "$f" | sed 's/  */ /g'
    grep -E "^\s+(OPT|INF).*(stall|Stall|cycles)" -A2 "$f" | cut -c1-300 | head -12
    sed -n '/Warp Stall Sampling (All Samples)/,/^$/p' "$f" | head -20
  done
done
