#!/usr/bin/env bash
# Installs a build of the project into a fresh prefix and uses it as other
# projects do: a CMake project of its own finds the package, links the
# libraries and runs fusion-fuse in its own opt tool; Debian's upstream
# mlir-opt loads the installed FusionPlugin.so; the installed fusion-compile
# builds a CPU library. Run by CTest (fusion-install).
#   test/install/run.sh BUILD
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD}" && pwd)
llvm_bin=$(llvm-config-22 --bindir 2>/dev/null || echo /usr/lib/llvm-22/bin)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
echo "install: $(find "$prefix" -type f | wc -l) files in $prefix"
input="$here/Inputs/prenorm.mlir"
check_fused() { # output of fusion-fuse on prenorm.mlir
  grep -q "fusion.fused_matmul" "$1" && ! grep -q "fusion.rms_norm" "$1" || {
    echo "FAIL: $2 did not fuse the norm:"; cat "$1"; exit 1; }
}
# 1. find_package(Fusion) from a project of its own.
cmake -G Ninja -S "$here/consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir > "$work/configure.log"
ninja -C "$work/consumer" > "$work/build.log"
"$work/consumer/consumer-opt" "$input" --fusion-fuse -o "$work/consumer.mlir"
check_fused "$work/consumer.mlir" "consumer-opt (find_package(Fusion))"
echo "PASS: a project of its own found the package and ran fusion-fuse"
# 2. The installed plugin in Debian's mlir-opt.
if [ -f "$prefix/lib/FusionPlugin.so" ]; then
  "$llvm_bin/mlir-opt" --load-dialect-plugin="$prefix/lib/FusionPlugin.so" \
    --load-pass-plugin="$prefix/lib/FusionPlugin.so" \
    --pass-pipeline='builtin.module(fusion-fuse)' "$input" -o "$work/plugin.mlir"
  check_fused "$work/plugin.mlir" "mlir-opt with the installed FusionPlugin.so"
  echo "PASS: upstream mlir-opt loaded the installed plugin and ran fusion-fuse"
else
  echo "FAIL: the install has no lib/FusionPlugin.so"; exit 1
fi
# 3. The installed fusion-compile, for the CPU.
"$prefix/bin/fusion-compile" --cpu "$input" -o "$work/libprenorm.so"
nm -D --defined-only "$work/libprenorm.so" | grep -q " T prenorm$" || {
  echo "FAIL: the installed fusion-compile's library does not export prenorm"; exit 1; }
echo "PASS: the installed fusion-compile built a CPU library"
