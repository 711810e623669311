#!/usr/bin/env bash
# The regrouped training steps (backward regrouping: each norm's gradient in
# the epilogue of the dgrad GEMM that produces its incoming gradient, the
# grad epilogue in the epilogue warps) as an artifact folder of their own,
# BUILD/gpu-regroup: the train_step_{rms,ln}_h{256,...,4096} and
# train_step_res_{rms,ln}_h{256,1024} (residual blocks) programs of
# gen_layers.py compiled with fusion-compile --regroup-backward (H > 1024 is
# not regrouped: those rows need the global-memory exchange; they build as
# in the default folder), layers.json and a copy of the runtime; the other
# programs are not built there. No GPU needed; carry
# BUILD/gpu-regroup to the device and run, for example,
#
#   FUSION_GPU_ARTIFACTS=build/gpu-regroup python3 -m pytest -v -s test/gpu/test_train_step_gpu.py
#   FUSION_GPU_ARTIFACTS=build/gpu-regroup python3 bench/bench_train_step.py --hs 512,768,1024 --out ...
#
# It also builds the same programs unregrouped into BUILD/gpu-plain (the
# baseline of the same commit, with its own runtime copy), so that
# bench/layers/run_regroup_h200.sh BUILD/gpu-regroup BUILD/gpu-plain compares
# them in one run. Carry both folders (about 10 MB).
#
#   bash bench/layers/build_regrouped.sh [BUILD]      (default: build)
set -uo pipefail
build=${1:-build}
programs='^train_step_(res_)?(rms|ln)_h[0-9]+$'
ARTIFACTS="$build/gpu-regroup" bash bench/layers/build_layers.sh "$build" "$programs" \
  --regroup-backward || exit 1
ARTIFACTS="$build/gpu-plain" bash bench/layers/build_layers.sh "$build" "$programs"
