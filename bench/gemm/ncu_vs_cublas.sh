#!/usr/bin/env bash
# ncu (base clocks) of our plain GEMM and cuBLAS's at the same shape:
# throughput of SM, tensor pipe, L2 and DRAM, and the warp stalls.
#   FUSION_GPU_ARTIFACTS=build/gpu OUT=$OUT bash bench/gemm/ncu_vs_cublas.sh bench_gemm_4096
set -uo pipefail
case=$1
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,launch__grid_size,launch__cluster_dim_x,launch__registers_per_thread,sm__cycles_active.avg
here=$(dirname "$0")
timeout 250 ncu --kernel-name regex:kernel0 --launch-skip 1 --launch-count 1 --metrics $metrics \
  --section WarpStateStats python3 bench/profile_case.py $case 2 > $OUT/ncu_ours_$case.txt 2>&1
echo "ours exit $?"; grep -E "^\s+(gpu__|sm__|lts__|dram__|l1tex__|launch__|Stall|Warp Cycles)" $OUT/ncu_ours_$case.txt
cat > /tmp/cublas_case.py <<PY
import json, os, sys, torch
sys.path.insert(0, "test/gpu")
from fused_matmul_reference import make_inputs
art = os.environ.get("FUSION_GPU_ARTIFACTS", "build/gpu")
c = next(c for c in json.load(open(os.path.join(art, "bench.json"))) if c["name"] == "$case")
x = make_inputs(c, torch.Generator(device="cuda").manual_seed(1))
b = x["b"].t() if c.get("transpose_rhs") else x["b"]
for _ in range(3):
    torch.mm(x["a"], b)
torch.cuda.synchronize()
PY
timeout 250 ncu --kernel-name regex:"nvjet|gemm|sm90" --launch-skip 1 --launch-count 1 --metrics $metrics \
  --section WarpStateStats python3 /tmp/cublas_case.py > $OUT/ncu_cublas_$case.txt 2>&1
echo "cublas exit $?"; grep -E "nvjet|sm90_|^\s+(gpu__|sm__|lts__|dram__|l1tex__|launch__|Stall|Warp Cycles)" $OUT/ncu_cublas_$case.txt | head -30
