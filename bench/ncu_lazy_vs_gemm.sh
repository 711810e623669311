export FUSION_GPU_ARTIFACTS=build/gpu
for c in bench_gemm_4096 bench_lazy_rms_4096; do
  timeout 200 ncu --kernel-name regex:kernel0 --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg python3 bench/profile_case.py $c 2 > $OUT/ncu_$c.txt 2>&1
  echo "$c exit $?"
  grep -E "Duration|Throughput|Stall|stall|Warp Cycles|bank_conflicts|wavefronts|inst_executed|cycles_elapsed|Issue Slots|Executed Ipc|Pipe" $OUT/ncu_$c.txt | head -40
done
