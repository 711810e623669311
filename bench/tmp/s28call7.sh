#!/bin/bash
# P (and FlashNormAttention's ln_q) in registers as the MMAs' A (wgmma's register form): the H200
# check prepared in session 28, never run. Build first (here):
#   bench/build_gpu_artifacts.sh build attention
#   for n in gdpa_kunlun_h2 gdpa_kunlun_h4 block_kunlun_h2 block_kunlun_h4; do
#     FUSION_P_SMEM=1 build/bin/fusion-compile build/gpu/attention/$n.mlir -o build/gpu/attention/lib${n}_smem.so; done
# (default = registers, _smem = main's shared-memory form)
set -u
export PYTHONUNBUFFERED=1 FUSION_GPU_ARTIFACTS=$PWD/build/gpu FUSION_RUNTIME_LIBRARY=$PWD/build/gpu/libfusion_runtime.so
S=$OUT/summary.txt
t() { local name=$1; shift; local t0=$(date +%s); timeout ${TO:-200} "$@" > $OUT/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s)-t0 ))s | $(tail -n 3 $OUT/$name.log | grep -E 'passed|failed|SUMMARY|ok|NaN|Error' | tr '\n' ' ' | cut -c1-300)" | tee -a $S; }
TO=60 t attn python3 -m pytest -q -x test/gpu/test_attention_gpu.py
grep -E "FAIL|Error|assert" $OUT/attn.log | head -10 >> $S
TO=40 t block_grad python3 -m pytest -q -x test/gpu/test_attention_block_grad_gpu.py
TO=40 t rc_gdpa compute-sanitizer --tool racecheck --error-exitcode 9 python3 test/gpu/run_one_attention.py gdpa_kunlun_h2 4 300
TO=40 t rc_block compute-sanitizer --tool racecheck --error-exitcode 9 python3 test/gpu/run_one_attention.py block_kunlun_h2 4 300
TO=50 t gdpa_ab python3 bench/tmp/gdpa_ab.py
grep -E "^gdpa" $OUT/gdpa_ab.log >> $S
TO=70 t ab_block python3 bench/attention/ab_block.py --variants ,_smem --rounds 2 --out $OUT/ab_block.json --commit ${COMMIT:-unknown}
python3 -c "
import json,os
d=json.load(open(os.environ['OUT']+'/ab_block.json'))
for r in d['rows']: print(r['case'], {k: round(v,4) for k,v in r['mean_ms'].items()}, r['rel_err'])" >> $S 2>&1
