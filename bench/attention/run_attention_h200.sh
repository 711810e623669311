#!/usr/bin/env bash
# The H200 run of the attention kernel (issue 17): the correctness tests,
# compute-sanitizer (memcheck, racecheck, synccheck) on a 2-stage and a
# 1-stage gdpa program and the FlashNormAttention kernel (clusters of 2 and
# 4), and the benchmark; the backward (fusion.gdpa_grad) in phases
# gradtests and gradsanitize (a 2-group, a 1-group and a D != Dv program,
# three with keys past 128), its benchmark within bench; the Kunlun block's training step and backward
# (kunlun_train_*, kunlun_backward_*) in phases blockgradtests and
# blockgradsanitize; logs and JSON under OUT. Each step
# has a time limit, so a hang costs its step only.
#
#   FUSION_GPU_ARTIFACTS=build/gpu bench/attention/run_attention_h200.sh OUT COMMIT [PHASES]
set -uo pipefail
out=$1 commit=$2 phases=${3:-tests,sanitize,gradtests,gradsanitize,blockgradtests,blockgradsanitize,bench}
export FUSION_GPU_ARTIFACTS=${FUSION_GPU_ARTIFACTS:-build/gpu}
mkdir -p "$out"
if [[ ,$phases, == *,tests,* ]]; then
  timeout 300 python3 -m pytest -q -s test/gpu/test_attention_gpu.py > "$out/attention_tests.txt" 2>&1
  echo "tests rc=$?" | tee -a "$out/attention_tests.txt"
fi
if [[ ,$phases, == *,sanitize,* ]]; then
  # The jagged block too, but not under synccheck: synccheck cannot run
  # programs that allocate from the stream-ordered pool (jagged ones do:
  # "unspecified launch failure" with 0 errors, bench/results/HISTORY.md).
  for tool in memcheck racecheck synccheck; do
    cases=("gdpa_kunlun_h2 4 300" "gdpa_relu_kv256 2 65" "block_kunlun_h2 4 300" "block_kunlun_h4 2 129")
    [ $tool = synccheck ] || cases+=("block_jagged_kunlun_h2 5 300")
    for c in "${cases[@]}"; do
      echo "== $tool $c" >> "$out/attention_sanitize.txt"
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 \
        python3 test/gpu/run_one_attention.py $c >> "$out/attention_sanitize.txt" 2>&1
      echo "rc=$?" >> "$out/attention_sanitize.txt"
    done
  done
  grep -E "^==|rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$out/attention_sanitize.txt"
fi
if [[ ,$phases, == *,gradtests,* ]]; then
  timeout 400 python3 -m pytest -q -s test/gpu/test_attention_grad_gpu.py > "$out/attention_grad_tests.txt" 2>&1
  echo "grad tests rc=$?" | tee -a "$out/attention_grad_tests.txt"
fi
if [[ ,$phases, == *,gradsanitize,* ]]; then
  for tool in memcheck racecheck synccheck; do
    # The last three: keys past 128 (two passes; the second's group past
    # L_kv skipped at 150; jagged with a residual of its own at 160).
    for c in "gdpa_grad_kunlun_h2 3 300" "gdpa_grad_relu_kv64 2 65" "gdpa_grad_silu_d64 2 77" "gdpa_grad_jagged_kunlun 7 200" \
             "gdpa_grad_kv256_h2 3 300" "gdpa_grad_kv150_silu 3 300" "gdpa_grad_jagged_residual_kv160_d64 6 200"; do
      echo "== $tool $c" >> "$out/attention_grad_sanitize.txt"
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 \
        python3 test/gpu/run_one_attention.py $c >> "$out/attention_grad_sanitize.txt" 2>&1
      echo "rc=$?" >> "$out/attention_grad_sanitize.txt"
    done
  done
  grep -E "^==|rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$out/attention_grad_sanitize.txt"
fi
if [[ ,$phases, == *,blockgradtests,* ]]; then
  timeout 300 python3 -m pytest -q -s test/gpu/test_attention_block_grad_gpu.py > "$out/attention_block_grad_tests.txt" 2>&1
  echo "block grad tests rc=$?" | tee -a "$out/attention_block_grad_tests.txt"
fi
if [[ ,$phases, == *,blockgradsanitize,* ]]; then
  for tool in memcheck racecheck; do
    for c in "kunlun_train_h2 3 300" "kunlun_backward_h4 2 77"; do
      echo "== $tool $c" >> "$out/attention_block_grad_sanitize.txt"
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 \
        python3 test/gpu/run_one_attention.py $c >> "$out/attention_block_grad_sanitize.txt" 2>&1
      echo "rc=$?" >> "$out/attention_block_grad_sanitize.txt"
    done
  done
  grep -E "^==|rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$out/attention_block_grad_sanitize.txt"
fi
if [[ ,$phases, == *,bench,* ]]; then
  timeout 400 python3 bench/bench_attention.py --out "$out/bench_attention.json" --commit "$commit" \
    > "$out/bench_attention.txt" 2>&1
  echo "bench rc=$?"; tail -8 "$out/bench_attention.txt"
fi
