#!/usr/bin/env bash
# Same-run A/B of standalone norm kernel variants on the H200 (issue 14):
# bench/bench_norms.py once per artifact directory, in the order given (name
# one twice to see the drift), each built by bench/layers/build_layers.sh
# from a different compiler; torch.compile is measured in every run.
#
#   bench/layers/run_norm_variants_h200.sh OUT COMMIT REGEX BUILD/VARIANT/gpu...
set -uo pipefail
out=$1 commit=$2 only=$3; shift 3
mkdir -p "$out"
i=0
for dir in "$@"; do
  i=$((i + 1))
  v=$i-$(basename "$(dirname "$dir")")
  timeout 240 python3 bench/bench_norms.py --artifacts "$dir" --only "$only" \
    --out "$out/norms_$v.json" --commit "$commit-$v" > "$out/norms_$v.txt" 2>&1
  echo "== $v rc=$?"; grep -E "^\|" "$out/norms_$v.txt" | tail -n +3
done
