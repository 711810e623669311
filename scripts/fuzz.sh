#!/usr/bin/env bash
# Runs fusion-fuzz (tools/fusion-fuzz) for a bounded time, seeded with every
# case of the lit suite, after replaying the saved reproducers of
# test/fuzz/regressions. A crash, a sanitizer report, a hang (> 10 s on one
# input) or > 4 GB of memory fails the run and leaves the input under
# BUILD/fuzz/artifacts.
#   scripts/fuzz.sh BUILD SECONDS [more libFuzzer flags, e.g. -runs=1000000]
# BUILD is a build configured by scripts/sanitize.sh (FUSION_BUILD_FUZZERS=ON).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/fuzz.sh BUILD SECONDS [libFuzzer flags]}
secs=${2:?usage: scripts/fuzz.sh BUILD SECONDS [libFuzzer flags]}
shift 2
fuzz="$build/bin/fusion-fuzz"
[ -x "$fuzz" ] || { echo "fuzz.sh: no $fuzz (configure with -DFUSION_BUILD_FUZZERS=ON)" >&2; exit 1; }
work="$build/fuzz"
mkdir -p "$work/corpus" "$work/artifacts"
rm -rf "$work/seeds"
python3 "$root/test/fuzz/make_corpus.py" "$root" "$work/seeds"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
# allow_user_poisoning=0: see test/fuzz/README.md (ASan and MLIR).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1:allow_user_poisoning=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "fuzz.sh: replaying test/fuzz/regressions"
FUSION_FUZZ_ALL_STAGES=1 "$fuzz" -timeout=10 -rss_limit_mb=4096 "$root"/test/fuzz/regressions/*.mlir
echo "fuzz.sh: fuzzing for $secs s"
"$fuzz" "$work/corpus" "$work/seeds" -max_total_time="$secs" -timeout=10 \
  -rss_limit_mb=4096 -max_len=32768 -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1 "$@"
