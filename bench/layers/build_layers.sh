#!/usr/bin/env bash
# Compiles the layer programs of bench/layers/gen_layers.py (issue 14) into
# BUILD/gpu/layers: lib<name>.so by fusion-compile's default pipeline
# (fusion-fuse, then the kernels) and lib<name>_unfused.so without
# fusion-fuse (fusion-compile --no-fuse, where fusion-compile has it), from
# a copy of the program whose function is named <name>_unfused; for the
# ln_prenorm programs also lib<name>_lazyln.so with --lazy-layer-norm. A
# program the compiler refuses is skipped with a warning and the compiler's
# error (whole in layers/<name>[_unfused].log); the layer tests and
# benchmarks skip what was not built. Called by bench/build_gpu_artifacts.sh.
#
#   bench/layers/build_layers.sh [BUILD] [REGEX] [FLAGS...]   (default: build, every program)
#
# FLAGS: extra fusion-compile options for the fused libraries (not the
# _unfused ones, which are --no-fuse), e.g. --regroup-backward; a program's
# <name>.flags file (gen_layers.py, a program's "flags") adds its own. ARTIFACTS
# (default BUILD/gpu): the artifact folder whose layers/ receives the
# libraries; another folder than BUILD/gpu also gets a copy of the runtime,
# so that it can be carried and run on its own (FUSION_GPU_ARTIFACTS=it).
# bench/layers/build_regrouped.sh uses both for the regrouped training steps.
set -uo pipefail
build=${1:-build}
only=${2:-}
extra=("${@:3}")
artifacts=${ARTIFACTS:-$build/gpu}
out="$artifacts/layers"
compile="$build/bin/fusion-compile"
[ -x "$compile" ] || { echo "build_layers: no $compile" >&2; exit 1; }
mkdir -p "$out"
if [[ "$artifacts" != "$build/gpu" ]]; then
  cp -P "$build"/lib/libfusion_runtime.so* "$artifacts/" || exit 1
fi
python3 bench/layers/gen_layers.py "$out" || exit 1
variants="fused unfused"
if ! grep -q -- "--no-fuse" "$compile"; then
  echo "build_layers: warning: fusion-compile has no --no-fuse option: no unfused libraries"
  variants="fused"
fi
built=0; refused=0
# <name>.mlir -> lib<name>.so; <name>_unfused.mlir (its function renamed) ->
# lib<name>_unfused.so with --no-fuse.
for f in "$out"/*.mlir; do
  name=$(basename "$f" .mlir)
  [[ -z "$only" || "$name" =~ $only ]] || continue
  flags=(${extra[@]+"${extra[@]}"})
  # <name>.flags (gen_layers.py): the fused library's own options.
  [[ -f "$out/$name.flags" ]] && flags+=($(cat "$out/$name.flags"))
  if [[ "$name" == *_unfused ]]; then
    [[ "$variants" == *unfused* ]] || continue
    flags=(--no-fuse)
  fi
  # <name>_lazyln.mlir (ln_prenorm): the LayerNorm deferred into the GEMM.
  if [[ "$name" == *_lazyln ]]; then
    grep -q -- "--lazy-layer-norm" "$compile" || continue
    flags=(--lazy-layer-norm ${extra[@]+"${extra[@]}"})
  fi
  lib="$out/lib$name.so" log="$out/$name.log"
  rm -f "$lib" "$log"
  if "$compile" "$f" -o "$lib" ${flags[@]+"${flags[@]}"} > "$log" 2>&1; then
    built=$((built + 1)); rm -f "$log"
  else
    refused=$((refused + 1)); rm -f "$lib"
    echo "build_layers: warning: $name not built; fusion-compile${flags[*]:+ ${flags[*]}} said:"
    head -n 12 "$log" | cut -c1-300 | sed 's/^/    /'
  fi
done
echo "build_layers: $built libraries built, $refused refused, in $out"
