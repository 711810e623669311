# Shell functions the layer device scripts share (source it):
#   ncu_kernel_times ARTIFACTS LAYER TOKENS LABEL
#       one line "== ncu LABEL LAYER TOKENS: <kernel> <us> ..." with each of
#       our kernels' device time over 3 calls of the layer (ncu, base clocks)
#   sanitize_layer ARTIFACTS TOOL LAYER M LOG [LABEL]
#       compute-sanitizer TOOL on one call of the layer at M tokens
#       (test/gpu/run_one_layer.py), its output in LOG, one summary line
ncu_kernel_times() {
  FUSION_GPU_ARTIFACTS=$1 timeout 60 ncu --profile-from-start off --metrics gpu__time_duration.sum \
    python3 bench/layers/profile_layer.py "$2" 3 "$3" 2>&1 | grep -E "_kernel[0-9] |gpu__time" | \
    awk '/kernel/{k=$1} /gpu__time/{printf "%s %s ", k, $3} END{print ""}' | sed "s/^/== ncu $4 $2 $3: /"
}
sanitize_layer() {
  FUSION_GPU_ARTIFACTS=$1 timeout 90 compute-sanitizer --tool "$2" --error-exitcode 9 \
    python3 test/gpu/run_one_layer.py "$3" "$4" > "$5" 2>&1
  echo "== $2 ${6:+$6 }$3 $4: exit $? $(grep SUMMARY "$5")"
}
