#!/usr/bin/env python3
"""The host's share of a call, on small problems where it can dominate: for a
few correctness cases (M = 1000-9001), the kernels' own time (profiler
records), the loader call timed like the baselines (do_bench: CUDA events
around back-to-back calls on the current stream), the host time per call
(wall clock over back-to-back asynchronous calls, no synchronization), and
the replay of the call captured in a CUDA graph. Writes JSON.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/call_overhead.py --out call_overhead.json
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
from triton.testing import do_bench

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from bench_fused_matmul import kernel_ms  # noqa: E402
import fusion_runtime as fr  # noqa: E402
from fused_matmul_reference import make_inputs, make_outputs  # noqa: E402

CASES = ["gemm_seed_8192x512x512", "lazy_rms_8192x512x512", "rms_epi_8192x512x256",
         "ln_epi_cluster4_n1024", "ln_epi_split_n1536"]


def host_us_per_call(call, calls=300):
    call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return host


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--artifacts", default=os.environ.get("FUSION_GPU_ARTIFACTS",
                                                         os.path.join(REPO, "build", "gpu")))
    p.add_argument("--out", default="call_overhead.json")
    p.add_argument("--commit", default="unknown")
    a = p.parse_args()
    manifest = {c["name"]: c for c in json.load(open(os.path.join(a.artifacts, "correctness.json")))}
    lib = fr.Library(os.path.join(a.artifacts, "libcorrectness.so"),
                     runtime=os.path.join(a.artifacts, "libfusion_runtime.so"))
    rows = []
    for name in CASES:
        c = manifest[name]
        x = make_inputs(c, torch.Generator(device="cuda").manual_seed(0))
        y = make_outputs(c)
        fn = lib.function(name, c["signature"])
        call = lambda: fn(*x.values(), *y.values())  # noqa: E731
        call()
        torch.cuda.synchronize()
        kernel, how = kernel_ms(call)
        called = do_bench(call, warmup=25, rep=200, return_mode="median")
        host = host_us_per_call(call)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        replay = do_bench(graph.replay, warmup=25, rep=200, return_mode="median")
        row = dict(name=name, m=c["m"], k=c["k"], n=c["n"], kernel_ms=kernel, kernel_timing=how,
                   call_ms=called, host_us_per_call=host, graph_replay_ms=replay,
                   call_over_kernel=called / kernel)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump(dict(date=datetime.date.today().isoformat(), commit=a.commit,
                       gpu=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows),
                  f, indent=1)
    print(f"\n{'case':26} {'kernel ms':>9} {'call ms':>8} {'host us':>8} {'graph ms':>9} {'call/kernel':>11}")
    for r in rows:
        print(f"{r['name']:26} {r['kernel_ms']:9.4f} {r['call_ms']:8.4f} {r['host_us_per_call']:8.1f} "
              f"{r['graph_replay_ms']:9.4f} {r['call_over_kernel']:11.2f}")


if __name__ == "__main__":
    main()
