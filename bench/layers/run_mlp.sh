#!/usr/bin/env bash
# The MLPs (fusion-activation-epilogue): Llama's gated MLP after its RMSNorm
# (llama_mlp_h{H}: the norm in the prologue of one GEMM over gate's and up's
# weights, act(gate) * up in its epilogue, then down_proj) and GPT-2's
# (gpt2_mlp_h{H}: gelu_tanh in c_fc's epilogue): correctness at 65536 tokens
# and at 1 / 100 / 4097 (the small-M body, a last row block past M),
# sanitizers, and the user-visible time against the unfused call (six
# kernels: norm, three GEMMs, the activation and product kernels) and
# torch.compile. Build here (about 20 s):
#   bash bench/layers/run_mlp.sh --prepare build
# then on the device, carrying build/mlp:
#   C=abc OUT=$OUT bash bench/layers/run_mlp.sh
# Session 47's predictions are in bench/results/HISTORY.md.
set -u
export PYTHONUNBUFFERED=1
. bench/layers/layer_checks.sh
regex='^(llama_mlp|gpt2_mlp)_h[0-9]+(_unfused)?$'
if [ "${1:-}" = --prepare ]; then
  build=${2:-build}
  out=build/mlp/gpu
  rm -rf build/mlp && mkdir -p "$out"
  cp -P "$build"/lib/libfusion_runtime.so* "$out/"
  ARTIFACTS=$out bash bench/layers/build_layers.sh "$build" "$regex" | tail -n 2
  du -sh build/mlp
  exit 0
fi
art=build/mlp/gpu
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
FUSION_GPU_ARTIFACTS=$art timeout 300 python3 -m pytest -q -rs test/gpu/test_layers_gpu.py \
  -k "mlp" > "$OUT/mlp_layers.txt" 2>&1
echo "== layers llama_mlp / gpt2_mlp: exit $? $(tail -n 1 "$OUT/mlp_layers.txt")"
grep -E "FAILED|rel err" "$OUT/mlp_layers.txt" | cut -c1-200 | head -12
for t in "memcheck llama_mlp_h1024 4097" "racecheck llama_mlp_h768 100" \
         "memcheck gpt2_mlp_h768 1001"; do
  set -- $t
  sanitize_layer "$art" $1 $2 $3 "$OUT/san_$1_$2.txt"
done
timeout 400 python3 bench/bench_layers.py --artifacts "$art" --m 65536 \
  --kinds llama_mlp,gpt2_mlp --only "${BENCH:-.}" --rounds 2 \
  --out "$OUT/layers_mlp.json" --commit "${C:-unknown}" > "$OUT/layers_mlp.txt" 2>&1
echo "== bench_layers mlp 65536: exit $?"
sed -n '/^| /p' "$OUT/layers_mlp.txt" | cut -c1-260
