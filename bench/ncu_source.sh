#!/usr/bin/env bash
# Source-level ncu profile of benchmark cases on the device: per case, the
# details page (speed of light, warp states) and the per-SASS-instruction
# samples and stall reasons as a gzipped CSV, for analysis off the device.
#
#   OUT=$OUT bash bench/ncu_source.sh CASE...
# A CASE named layer:NAME is the fused library of layer program NAME
# (bench/layers/profile_layer.py), the others bench/profile_case.py's.
set -uo pipefail
export FUSION_GPU_ARTIFACTS=${FUSION_GPU_ARTIFACTS:-build/gpu}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for spec in "$@"; do
  c=${spec#layer:}
  runner=(bench/profile_case.py "$c" 2)
  [ "$c" = "$spec" ] || runner=(bench/layers/profile_layer.py "$c" 2)
  timeout 240 ncu --kernel-name regex:kernel0 --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters \
    --import-source no -f -o "/tmp/ncu_$c" python3 "${runner[@]}" > /dev/null 2>&1
  echo "$c: ncu exit $?"
  ncu --import "/tmp/ncu_$c.ncu-rep" --page details > "$OUT/ncu_$c.txt" 2>&1
  ncu --import "/tmp/ncu_$c.ncu-rep" --page source --csv --print-source sass 2>/dev/null \
    | gzip -9 > "$OUT/ncu_${c}_sass.csv.gz"
  grep -E "Duration|Warp Cycles Per Issued|Issued Ipc" "$OUT/ncu_$c.txt" | head -4
done
