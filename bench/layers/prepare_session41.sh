#!/usr/bin/env bash
# Builds, here (no GPU), everything session 41 left to run on the device,
# with one compiler (this checkout's):
#   BUILD/lnab/{ln-main,ln-pf}/gpu   the standalone norms without and with
#                                    --rows-prefetch (bench/layers/run_ln_prefetch.sh)
#   BUILD/split/{plain,split}/gpu    Llama's pre-norm and Qwen3's q_proj + q_norm
#                                    without and with --small-m-split
#                                    (bench/layers/run_small_m_split.sh)
#   BUILD/frontend-decode            the front end's decode cases, both ways
#                                    (bench_frontend.py at 16 tokens replays
#                                    both calls as CUDA graphs too)
# Then on the device, one call each (carry the folder named):
#   C=abc OUT=$OUT bash bench/layers/run_small_m_split.sh BUILD/split
#   C=abc OUT=$OUT bash bench/layers/run_ln_prefetch.sh BUILD/lnab
#   for f in "" --small-m-split; do FUSION_COMPILE_FLAGS=$f python3 bench/frontend/bench_frontend.py \
#     --dir BUILD/frontend-decode --tokens 16 --only 'llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048|qwen3_attention_inputs_h4096' \
#     --json $OUT/frontend16${f//-/_}.json; done
#
#   bash bench/layers/prepare_session41.sh [BUILD]    # about 4 minutes on 2 cores
set -euo pipefail
build=${1:-build}
py=${PYTHON:-.venv/bin/python}
norms='^(rms_norm|layer_norm)(_infer)?_h(768|1024|1000|1001|4096)$'
layers='^(llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048)(_unfused)?$'
rm -rf "$build/lnab" "$build/split" "$build/frontend-decode"
ARTIFACTS="$build/lnab/ln-main/gpu" bash bench/layers/build_layers.sh "$build" "$norms"
ARTIFACTS="$build/lnab/ln-pf/gpu" bash bench/layers/build_layers.sh "$build" "$norms" --rows-prefetch
ARTIFACTS="$build/split/plain/gpu" bash bench/layers/build_layers.sh "$build" "$layers"
ARTIFACTS="$build/split/split/gpu" bash bench/layers/build_layers.sh "$build" "$layers" --small-m-split
for flags in "" "--small-m-split"; do
  FUSION_COMPILE_FLAGS="$flags" FUSION_TOOLS_DIR="$build/bin" "$py" bench/frontend/bench_frontend.py \
    --prepare "$build/frontend-decode" \
    --only "llama_prenorm_h(1024|4096)|qwen3_q_norm_h2048|qwen3_attention_inputs_h4096" \
    > "$build/frontend-decode.log" 2>&1
done
"$py" -c "import torch; print(torch.__version__)" > "$build/frontend-decode/torch-version.txt"
du -sh "$build/lnab" "$build/split" "$build/frontend-decode"
