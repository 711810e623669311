#!/usr/bin/env bash
# Runs fusion-fuzz (tools/fusion-fuzz) for a bounded time, seeded with every
# case of the lit suite (lit replays the saved reproducers of
# test/fuzz/regressions: replay-regressions.test). A crash or sanitizer
# report in our code, a hang (> 30 s on one input) or > 4 GB of memory fails the run and leaves the
# input under BUILD/fuzz/artifacts; a crash inside libMLIR alone is kept
# under BUILD/fuzz/upstream and fuzzing goes on.
#   scripts/fuzz.sh BUILD SECONDS [more libFuzzer flags, e.g. -runs=1000000]
# BUILD is a build configured by scripts/sanitize.sh (FUSION_BUILD_FUZZERS=ON).
set -euo pipefail
# Seconds one input may take: the lit suite's largest modules (four wide-head
# attention backward kernels) take 13-16 s through the whole pipeline to PTX
# under ASan on a 2-core machine (the one-in-32 stage; session 45's CI met
# one), so a hang is what takes more than twice that; libFuzzer's slow-unit
# report (10 s by default, an artifact that fails the run here) likewise.
timeout=30
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
echo "fuzz.sh: fuzzing for $secs s"
# libFuzzer stops at the first crash. Each crash is re-run alone and sorted:
# one with a frame of this repository's sources above the harness (lib/,
# include/, runtime/, the generated .inc files, fusion-runner's lowering) is
# ours and fails the run; one inside libMLIR/libLLVM alone, reached from the
# parser or an upstream pass, is upstream's: reported, kept under
# BUILD/fuzz/upstream/, and fuzzing goes on for the time left (we cannot fix
# libMLIR; test/fuzz/README.md). A hang (timeout) or a runaway (oom) fails.
mkdir -p "$work/upstream"
triage() { # artifact -> 0 upstream's, 1 ours
  local a=$1 name trace frames
  name=$(basename "$a")
  case "$name" in
    timeout-*|oom-*|slow-unit-*)
      echo "fuzz.sh: FAIL: $name: a hang or a runaway on this input ($a)"; return 1 ;;
  esac
  trace=$("$fuzz" -timeout=$timeout -rss_limit_mb=4096 "$a" 2>&1 || true)
  frames=$(printf '%s\n' "$trace" | sed -n '/ERROR: \|runtime error:/,/LLVMFuzzerTestOneInput/p')
  if [ -z "$frames" ]; then
    echo "fuzz.sh: FAIL: $name does not reproduce alone ($a)"; return 1
  elif printf '%s\n' "$frames" | grep -E -q \
      " ($root/(lib|include|runtime|tools/fusion-runner)/|$build/include/)"; then
    echo "fuzz.sh: FAIL: $name crashes our code ($a):"
    printf '%s\n' "$frames" | head -n 30; return 1
  fi
  cp "$a" "$work/upstream/"
  # A seed or corpus file that crashes would crash every restart: drop it.
  for f in "$work"/corpus/* "$work"/seeds/*; do
    ! cmp -s "$f" "$a" || rm -f "$f"
  done
  echo "fuzz.sh: upstream: $name crashes inside libMLIR/libLLVM only (kept in $work/upstream):"
  printf '%s\n' "$frames" | grep -E "^ *#[0-9]+ " | head -n 6
  return 0
}
deadline=$((SECONDS + secs)); runs=0; round=0
while [ $SECONDS -lt $deadline ]; do
  round=$((round + 1))
  rm -rf "$work/artifacts"; mkdir -p "$work/artifacts"
  "$fuzz" "$work/corpus" "$work/seeds" -max_total_time=$((deadline - SECONDS)) -timeout=$timeout \
    -report_slow_units=$timeout -rss_limit_mb=4096 -max_len=32768 \
    -artifact_prefix="$work/artifacts/" \
    -print_final_stats=1 "$@" > "$work/fuzz-$round.log" 2>&1 || true
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz-$round.log" | tail -n 1)
  # -fork=N prints no final stats: its last progress line counts every job's
  # inputs ("#N<tab>pulse ..." / "#N<tab>DONE ...").
  [ -n "$n" ] || n=$(grep -oE '^#[0-9]+' "$work/fuzz-$round.log" | tail -n 1 | tr -d '#')
  runs=$((runs + ${n:-0}))
  grep -E "^#[0-9]+ +(DONE|INITED)" "$work/fuzz-$round.log" | tail -n 1 || true
  found=("$work"/artifacts/*)
  [ -e "${found[0]}" ] || break
  for a in "${found[@]}"; do
    triage "$a" || { echo "fuzz.sh: $runs inputs, stopped by our crash"; exit 1; }
  done
done
echo "fuzz.sh: $runs inputs in $secs s, no crash, hang or runaway of ours" \
  "($(ls "$work/upstream" | wc -l) upstream crashes kept)"
