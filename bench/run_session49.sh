#!/usr/bin/env bash
# Session 49's device calls (carry build/gpu), in two parts of under ten
# minutes each:
#   PART=rope: fusion.rope's row kernel and the rope epilogue on the GPU
#     (tests, memcheck), the q_rope layers timed (fused / unfused /
#     torch.compile, bench_layers);
#   PART=frontend: HF's LlamaDecoderLayer (2048) through the front end,
#     its rope as a row kernel and in the projections' epilogue;
#   PART=profile: where llama_mlp_h4096's gated GEMM loses to cuBLAS's two
#     GEMMs (ncu: our kernels, torch.compile's, the gated GEMM's full
#     section set), the LayerNorm training step at 2048 kernel by kernel.
# Writes $OUT/log_$PART.txt and JSON / ncu files beside it.
#
#   PART=rope C=<commit> OUT=$OUT bash bench/run_session49.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
A=build/gpu
export FUSION_GPU_ARTIFACTS=$A
. bench/layers/layer_checks.sh
part=${PART:-rope}
log=$OUT/log_$part.txt
all_kernel_times() {  # LABEL ARGS...: every kernel's device time (ncu, base clocks)
  local label=$1; shift
  timeout 240 ncu --profile-from-start off --metrics gpu__time_duration.sum "$@" 2>&1 | \
    awk '/Context [0-9]+, Stream/{k=$1} /gpu__time_duration/{printf "%s %s %s; ", k, $3, $2} END{print ""}' | \
    sed "s/^/== ncu $label: /"
}
{
  nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
  if [ "$part" = rope ]; then
    echo "== rope tests"
    timeout 300 python3 -m pytest -q test/gpu/test_rows_gpu.py test/gpu/test_layers_gpu.py \
      -k "rope or other_rows" 2>&1 | tail -15
    sanitize_layer $A memcheck llama_q_rope_h1024 4097 /tmp/san_q_rope.txt
    sanitize_layer $A memcheck gptj_q_rope_h1024 100 /tmp/san_gptj_q_rope.txt
    sanitize_layer $A memcheck rope_gptj_h1024 4097 /tmp/san_rope_gptj.txt
    sanitize_layer $A memcheck llama_q_rope_pos2048_h1024 4097 /tmp/san_q_rope_pos.txt
    cat /tmp/san_*.txt | grep -m3 -A10 "Invalid\|Error" | head -30
    echo "== q_rope layers"
    timeout 240 python3 bench/bench_layers.py --artifacts $A --out "$OUT/layers_q_rope.json" \
      --commit "${C:-unknown}" --kinds llama_q_rope,neox_q_rope,gptj_q_rope --rounds 2 2>&1 | \
      grep -v Warning | tail -12
  elif [ "$part" = groups ]; then
    # The grouped tile order (commit 1ddc561): correctness of every GEMM
    # case and the layers it changes, memcheck with a last group of fewer
    # rows, then the MLPs and Llama's pre-norm timed, and the gated GEMM's
    # kernel time under ncu (17.96 ms row-major, session 49's profile).
    timeout 100 python3 -m pytest -q -x test/gpu/test_fused_matmul_gpu.py 2>&1 | tail -3
    timeout 60 python3 -m pytest -q test/gpu/test_layers_gpu.py -k "mlp" 2>&1 | tail -3
    timeout 150 python3 bench/bench_layers.py --artifacts $A --out "$OUT/layers_groups.json" \
      --commit "${C:-unknown}" --kinds llama_mlp,gpt2_mlp --only 'h(2048|4096)' \
      --rounds 2 2>&1 | grep "^|"
    [ -n "${NCU:-}" ] && all_kernel_times "ours llama_mlp_h4096" python3 bench/layers/profile_layer.py llama_mlp_h4096 3
  elif [ "$part" = frontend ]; then
    # HF's LlamaDecoderLayer through the front end: its q / k rope as the row
    # kernel (build/frontend-gpu) and in q_proj / k_proj's epilogue
    # (build/frontend-gpu-rope, FUSION_COMPILE_FLAGS=--rope-epilogue), both
    # prepared here by bench_frontend.py --prepare.
    for dir in build/frontend-gpu build/frontend-gpu-rope; do
      flags=""; [ "$dir" = build/frontend-gpu-rope ] && flags=--rope-epilogue
      echo "== frontend $dir"
      FUSION_COMPILE_FLAGS=$flags timeout 270 python3 bench/frontend/bench_frontend.py --dir $dir \
        --only llama_decoder_layer --rounds 2 --commit "${C:-unknown}" \
        --json "$OUT/frontend_$(basename $dir).json" 2>&1 | grep -v Warning | tail -8
    done
  else
    all_kernel_times "ours llama_mlp_h4096" python3 bench/layers/profile_layer.py llama_mlp_h4096 3
    all_kernel_times "compiled llama_mlp_h4096" python3 bench/layers/profile_layer.py llama_mlp_h4096 3 --compiled
    OUT=$OUT KERNEL='kernel3$' NCU_SET=full bash bench/ncu_source.sh layer:llama_mlp_h4096
    echo "== train step ln 2048"
    timeout 300 python3 bench/bench_train_step.py --out "$OUT/train_ln2048.json" --commit "${C:-unknown}" \
      --breakdown --hs 2048 --norms ln --rounds 2 2>&1 | grep -v Warning | tail -12
  fi
} >> "$log" 2>&1
ls -la "$OUT"
