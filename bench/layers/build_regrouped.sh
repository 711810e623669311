#!/usr/bin/env bash
# The regrouped training steps (backward regrouping: each norm's gradient in
# the epilogue of the dgrad GEMM that produces its incoming gradient) as
# artifact folders of their own:
#   BUILD/gpu-regroup           fusion-compile --regroup-backward: the RMSNorm
#                               and LayerNorm steps take the row sums from the
#                               next layer's output (row_dot: the consumers'
#                               epilogue, any H); the residual blocks the row
#                               exchange form (epilogue warps, H <= 1024);
#   BUILD/gpu-regroup-exchange  --regroup-backward --no-regroup-row-dot: the
#                               row exchange form for every step it takes;
#   BUILD/gpu-plain             unregrouped (the baseline of the same commit).
# The train_step_{rms,ln}_h{256,...,4096} and train_step_res_{rms,ln}_h{256,1024}
# (residual blocks) programs of gen_layers.py, layers.json and a copy of the
# runtime each; the other programs are not built there. No GPU needed; carry
# the folders (about 15 MB) to the device and run, for example,
#
#   FUSION_GPU_ARTIFACTS=build/gpu-regroup python3 -m pytest -v -s test/gpu/test_train_step_gpu.py
#   FUSION_GPU_ARTIFACTS=build/gpu-regroup python3 bench/bench_train_step.py --hs 512,1024,4096 --out ...
#
# or bench/layers/run_regroup_h200.sh, which compares them in one run.
#
#   bash bench/layers/build_regrouped.sh [BUILD]      (default: build)
set -uo pipefail
build=${1:-build}
programs='^train_step_(res_)?(rms|ln)_h[0-9]+$'
ARTIFACTS="$build/gpu-regroup" bash bench/layers/build_layers.sh "$build" "$programs" \
  --regroup-backward || exit 1
ARTIFACTS="$build/gpu-regroup-exchange" bash bench/layers/build_layers.sh "$build" \
  "$programs" --regroup-backward --no-regroup-row-dot || exit 1
ARTIFACTS="$build/gpu-plain" bash bench/layers/build_layers.sh "$build" "$programs"
