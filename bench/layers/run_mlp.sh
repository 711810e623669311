#!/usr/bin/env bash
# The MLPs (fusion-activation-epilogue): Llama's gated MLP after its RMSNorm
# (llama_mlp_h{H}: the norm in the prologue of one GEMM over gate's and up's
# weights, act(gate) * up in its epilogue, then down_proj) and GPT-2's
# (gpt2_mlp_h{H}: gelu_tanh in c_fc's epilogue): correctness at 65536 tokens
# and at 1 / 100 / 4097 (the small-M body, a last row block past M),
# sanitizers, and the user-visible time against the unfused call (six
# kernels: norm, three GEMMs, the activation and product kernels) and
# torch.compile. Also OLMo 2's sandwich post-norm with its residual stream
# folded (olmo2_post_h{H} built with --post-residual into build/mlp/post:
# session 47's phase B with the residual's pieces two rows ahead), against
# its default build (the norm epilogue, then the add kernel) in the same
# run. And through the Python front end (HF's LlamaMLP at 2048 / 5632 and
# 4096 / 11008, a LlamaDecoderLayer at 2048, Phi-3-mini's and GPT-2
# medium's MLP: bench_frontend.py). Build here
# (about a minute):
#   bash bench/layers/run_mlp.sh --prepare build
# then on the device, carrying build/mlp, one phase per call (each fits the
# 600 s limit; `all` runs them in turn):
#   C=abc OUT=$OUT bash bench/layers/run_mlp.sh tests      # correctness, sanitizers
#   C=abc OUT=$OUT BENCH='_h(768|1024)$' bash bench/layers/run_mlp.sh bench
#   C=abc OUT=$OUT BENCH='_h(2048|4096)$' bash bench/layers/run_mlp.sh bench
#                                        # bench_layers, the MLPs (two calls: each
#                                        # case compiles torch.compile afresh)
#   C=abc OUT=$OUT bash bench/layers/run_mlp.sh post       # post_residual: tests, bench
#   C=abc OUT=$OUT bash bench/layers/run_mlp.sh frontend   # bench_frontend
# Session 47's predictions are in bench/results/HISTORY.md.
set -u
export PYTHONUNBUFFERED=1
. bench/layers/layer_checks.sh
regex='^(llama_mlp|gpt2_mlp|gate_up)_h[0-9]+(_unfused)?$'
if [ "${1:-}" = --prepare ]; then
  build=${2:-build}
  out=build/mlp/gpu
  rm -rf build/mlp && mkdir -p "$out"
  cp -P "$build"/lib/libfusion_runtime.so* "$out/"
  ARTIFACTS=$out bash bench/layers/build_layers.sh "$build" "$regex" | tail -n 2
  ARTIFACTS=build/mlp/post bash bench/layers/build_layers.sh "$build" '^olmo2_post_h' \
    --post-residual | tail -n 1
  py=python3; [ -x .venv/bin/python ] && py=.venv/bin/python  # (torch: scripts/install-deps.sh)
  FUSION_TOOLS_DIR=$build/bin $py bench/frontend/bench_frontend.py --prepare build/mlp/fe \
    --only "llama_mlp|llama_decoder|phi3_mlp|gpt2_mlp" > build/mlp/fe.log 2>&1 || { tail -n 5 build/mlp/fe.log; exit 1; }
  du -sh build/mlp
  exit 0
fi
art=build/mlp/gpu
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
phase=${1:-all}
case "$phase" in tests|bench|post|frontend|all) ;;
  *) echo "run_mlp.sh: expected --prepare, tests, bench, post, frontend or all, got '$phase'" >&2
     exit 2 ;;
esac
want() { [ "$phase" = all ] || [ "$phase" = "$1" ]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if want tests; then
FUSION_GPU_ARTIFACTS=$art timeout 300 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
  -k "mlp or activation_tail" > "$OUT/mlp_layers.txt" 2>&1
echo "== layers llama_mlp / gpt2_mlp: exit $? $(tail -n 1 "$OUT/mlp_layers.txt")"
grep -E "FAILED|rel err" "$OUT/mlp_layers.txt" | cut -c1-200 | head -12
for t in "memcheck llama_mlp_h1024 4097" "racecheck llama_mlp_h768 100" \
         "memcheck gpt2_mlp_h768 1001"; do
  set -- $t
  sanitize_layer "$art" $1 $2 $3 "$OUT/san_$1_$2.txt"
done
fi
if want bench; then
timeout 550 python3 bench/bench_layers.py --artifacts "$art" --m 65536 \
  --kinds llama_mlp,gpt2_mlp --only "${BENCH:-.}" --rounds 2 \
  --out "$OUT/layers_mlp.json" --commit "${C:-unknown}" > "$OUT/layers_mlp.txt" 2>&1
echo "== bench_layers mlp 65536: exit $?"
sed -n '/^| /p' "$OUT/layers_mlp.txt" | cut -c1-260
fi
if want post; then
# post_residual: correctness (the token counts of test_post_residual_token_counts
# too), then the fused call (post_residual) against the unfused one and
# torch.compile; the default build's fused call is session 46's baseline
# (norm epilogue + add kernel): its bench_layers row from build/mlp/gpu
# would need those libraries, so the unfused call (3 kernels) stands in.
FUSION_GPU_ARTIFACTS=build/mlp/post timeout 200 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
  -k "olmo2_post" > "$OUT/post_layers.txt" 2>&1
echo "== layers olmo2_post (post_residual): exit $? $(tail -n 1 "$OUT/post_layers.txt")"
grep -E "FAILED" "$OUT/post_layers.txt" | cut -c1-200 | head -6
sanitize_layer build/mlp/post memcheck olmo2_post_h2048 1001 "$OUT/san_post_memcheck.txt"
timeout 200 python3 bench/bench_layers.py --artifacts build/mlp/post --m 65536 \
  --kinds olmo2_post --only "_h(1024|4096)$" --rounds 2 \
  --out "$OUT/layers_post.json" --commit "${C:-unknown}" > "$OUT/layers_post.txt" 2>&1
echo "== bench_layers olmo2_post (post_residual) 65536: exit $?"
sed -n '/^| /p' "$OUT/layers_post.txt" | cut -c1-260
fi
if want frontend; then
# Through the front end: HF's LlamaMLP and a LlamaDecoderLayer, the whole
# Python call against torch.compile.
timeout 550 python3 bench/frontend/bench_frontend.py --dir build/mlp/fe --rounds 2 \
  --only "llama_mlp|llama_decoder|phi3_mlp|gpt2_mlp" --json "$OUT/frontend_mlp.json" --commit "${C:-unknown}" \
  > "$OUT/frontend_mlp.txt" 2>&1
echo "== bench_frontend llama_mlp / decoder: exit $?"
tail -n 12 "$OUT/frontend_mlp.txt" | cut -c1-260
fi
