#!/usr/bin/env bash
# Source-level ncu profile of benchmark cases on the device: per case, the
# details page (speed of light, warp states) and the per-SASS-instruction
# samples and stall reasons as a gzipped CSV, for analysis off the device.
#
#   OUT=$OUT bash bench/ncu_source.sh CASE...
# A CASE named layer:NAME is the fused library of layer program NAME
# (bench/layers/profile_layer.py), the others bench/profile_case.py's.
# KERNEL (a regex, default kernel0) picks the function's kernel, e.g.
# 'kernel3$' for a training step's fourth; TAG names the files (default:
# the case; one case at a time with TAG); NCU_SET=full collects every section (slower) instead of
# speed of light, warp states and source counters. bench/ncu_sass_summary.py
# reads the CSV off the device (stall sites, stall and opcode mix per range).
#
#   FUSION_GPU_ARTIFACTS=build/gpu-plain KERNEL='kernel0$' NCU_SET=full \
#     OUT=$OUT bash bench/ncu_source.sh layer:train_step_rms_h1024
set -uo pipefail
export FUSION_GPU_ARTIFACTS=${FUSION_GPU_ARTIFACTS:-build/gpu}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for spec in "$@"; do
  c=${spec#layer:}
  t=${TAG:-$c}
  runner=(bench/profile_case.py "$c" 2)
  [ "$c" = "$spec" ] || runner=(bench/layers/profile_layer.py "$c" 2)
  sections=(--section SpeedOfLight --section WarpStateStats --section SourceCounters)
  [ "${NCU_SET:-}" = full ] && sections=(--set full)
  timeout 240 ncu --kernel-name "regex:${KERNEL:-kernel0}" --launch-skip 1 --launch-count 1 \
    "${sections[@]}" --import-source no -f -o "/tmp/ncu_$t" python3 "${runner[@]}" > /dev/null 2>&1
  echo "$t: ncu exit $?"
  ncu --import "/tmp/ncu_$t.ncu-rep" --page details > "$OUT/ncu_$t.txt" 2>&1
  ncu --import "/tmp/ncu_$t.ncu-rep" --page source --csv --print-source sass 2>/dev/null \
    | gzip -9 > "$OUT/ncu_${t}_sass.csv.gz"
  grep -E "Duration|Warp Cycles Per Issued|Issued Ipc" "$OUT/ncu_$t.txt" | head -4
done
