set -u
export PYTHONUNBUFFERED=1
C=$1
FUSION_GPU_ARTIFACTS=build/gpu-regroup timeout 200 python3 -m pytest -v -s -rs test/gpu/test_train_step_gpu.py > $OUT/tests_regroup.txt 2>&1; echo "tests exit $?"; tail -1 $OUT/tests_regroup.txt; grep -E "FAILED|Error|assert" $OUT/tests_regroup.txt | head -20 | cut -c1-300; grep "M=" $OUT/tests_regroup.txt | grep -v SKIP | sed 's/^test\S* //' | cut -c1-260 | head -20
for c in "train_step_ln_h1024" "train_step_rms_h768"; do for t in memcheck racecheck; do FUSION_GPU_ARTIFACTS=build/gpu-regroup timeout 120 compute-sanitizer --tool $t --error-exitcode 9 python3 test/gpu/run_one_layer.py $c 4097 > $OUT/san_${t}_$c.txt 2>&1; echo "$t $c exit $? $(grep -E 'SUMMARY|NaN' $OUT/san_${t}_$c.txt | tr '\n' ' ' | cut -c1-200)"; done; done
for d in gpu-regroup gpu; do FUSION_GPU_ARTIFACTS=build/$d timeout 200 python3 bench/bench_train_step.py --hs 512,768,1024 --rounds 2 --out $OUT/bench_step_$d.json --commit $C > $OUT/bench_$d.txt 2>&1; echo "bench $d exit $?"; sed -n '/^| /p' $OUT/bench_$d.txt; done
