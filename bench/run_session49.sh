#!/usr/bin/env bash
# Session 49's first device call (carry build/gpu): fusion.rope's row kernel
# on the GPU (tests + memcheck), where llama_mlp_h4096's gated GEMM loses to
# cuBLAS's two GEMMs (ncu: our kernels, torch.compile's kernels, the gated
# GEMM's full section set), and the LayerNorm training step at 2048 kernel
# by kernel. Writes $OUT/log.txt, $OUT/train_ln2048.json, ncu files.
#
#   C=<commit> OUT=$OUT bash bench/run_session49.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
A=build/gpu
export FUSION_GPU_ARTIFACTS=$A
. bench/layers/layer_checks.sh
log=$OUT/log.txt
all_kernel_times() {  # LABEL ARGS...: every kernel's device time (ncu, base clocks)
  local label=$1; shift
  timeout 240 ncu --profile-from-start off --metrics gpu__time_duration.sum "$@" 2>&1 | \
    awk '/Context [0-9]+, Stream/{k=$1} /gpu__time_duration/{printf "%s %s %s; ", k, $3, $2} END{print ""}' | \
    sed "s/^/== ncu $label: /"
}
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  echo "== rope tests"
  timeout 240 python3 -m pytest -q -x test/gpu/test_rows_gpu.py -k "rope or other_rows" 2>&1 | tail -12
  sanitize_layer $A memcheck rope_gptj_h1024 4097 /tmp/san_rope_gptj.txt
  sanitize_layer $A memcheck rope_neox_h1024 7 /tmp/san_rope_neox.txt
  grep -m5 -B2 -A8 "Invalid\|Error" /tmp/san_rope_gptj.txt | head -30
  all_kernel_times "ours llama_mlp_h4096" python3 bench/layers/profile_layer.py llama_mlp_h4096 3
  all_kernel_times "compiled llama_mlp_h4096" python3 bench/layers/profile_layer.py llama_mlp_h4096 3 --compiled
  all_kernel_times "ours llama_mlp_h2048" python3 bench/layers/profile_layer.py llama_mlp_h2048 3
  all_kernel_times "compiled llama_mlp_h2048" python3 bench/layers/profile_layer.py llama_mlp_h2048 3 --compiled
  OUT=$OUT KERNEL='kernel0$' NCU_SET=full bash bench/ncu_source.sh layer:llama_mlp_h4096
  echo "== train step ln 2048"
  timeout 300 python3 bench/bench_train_step.py --out "$OUT/train_ln2048.json" --commit "${C:-unknown}" \
    --breakdown --hs 2048 --norms ln --rounds 2 2>&1 | grep -v Warning | tail -12
} >> "$log" 2>&1
ls -la "$OUT"
