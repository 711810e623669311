#!/usr/bin/env bash
# Per-instruction stall samples (SASS) and the stall reasons of the 16-token
# small-M GEMM (see ncu_small_m.sh): where a decode call's time goes.
#   OUT=$OUT bash bench/layers/ncu_small_m_source.sh build/split
set -u
build=${1:-build/split}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for vlk in plain:qwen3_q_norm_h2048:kernel0 split:qwen3_q_norm_h2048:kernel0 plain:llama_prenorm_h4096:kernel2; do
  IFS=: read -r v l k <<< "$vlk"
  f="$OUT/src_${v}_$l"
  FUSION_GPU_ARTIFACTS=$build/$v/gpu timeout 150 ncu --profile-from-start off -k "regex:${l}_$k\$" -c 1 \
    --section SourceCounters --section WarpStateStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum" \
    --page source --print-source sass --csv \
    python3 bench/layers/profile_layer.py "$l" 1 16 > "$f.csv" 2>"$f.err"
  echo "== $v $l: exit $? $(wc -c < "$f.csv") bytes"
  FUSION_GPU_ARTIFACTS=$build/$v/gpu timeout 150 ncu --profile-from-start off -k "regex:${l}_$k\$" -c 1 \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_active.avg,smsp__warps_launched.sum" \
    python3 bench/layers/profile_layer.py "$l" 1 16 2>&1 | grep -E "stalled|inst_executed|duration|cycles_active|launched" | \
    awk '$NF+0 > 0.05 || /inst|dur|cycles|launched/' | sed 's/  */ /g'
  gzip -f "$f.csv"
done
