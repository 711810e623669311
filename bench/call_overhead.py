#!/usr/bin/env python3
"""The host's share of a call, on small problems where it can dominate (issue
14: at most 15 us of host time per call at 8192 x 512 x 512). For a few
correctness cases (M = 1000-9001), per case:

  kernel_ms              the kernels' own time (profiler records)
  call_ms                the loader call timed like the baselines (do_bench:
                         CUDA events around back-to-back calls on the current
                         stream)
  host_us_per_call       wall clock per call over back-to-back asynchronous
                         calls (no synchronization): what the host spends
  host_us_long_way       the same through the loader's long way (a full check
                         and one ctypes call per runtime step and per argument
                         word, as before fusionrtInvoke): the old cost, measured
                         in the same run
  python_us_per_call     the loader's Python part alone: the same calls with the
                         foreign call replaced by a no-op (checks, plan lookup,
                         pointers, stream query, packet)
  runtime_us_per_call    host_us_per_call - python_us_per_call: the foreign
                         call, the compiled host code, the runtime and the driver
  graph_replay_ms        the replay of the call captured in a CUDA graph
  torch_op_host_us       for scale: host time of a one-element torch add_

Writes JSON (--out) and prints a table.

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


def host_us_per_call(call, calls=200, rounds=10):
    """Median over rounds of the wall clock per call of `calls` back-to-back
    calls; the device is idle at the start of each round, and a round is short
    enough (200 launches) that the driver's launch queue never fills, so a
    host faster than the kernels is not slowed down to their pace."""
    call()
    torch.cuda.synchronize()
    per_round = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        per_round.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(per_round)


def python_us_per_call(fn, args, calls=200, rounds=10):
    """The loader's Python part alone: fn's foreign call replaced by a no-op."""
    invoke = fn._invoke
    if invoke is None:
        return None
    fn._invoke = lambda address: 0
    try:
        per_round = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            per_round.append((time.perf_counter() - t0) / calls * 1e6)
    finally:
        fn._invoke = invoke
    return statistics.median(per_round)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--artifacts", default=os.environ.get("FUSION_GPU_ARTIFACTS",
                                                         os.path.join(REPO, "build", "gpu")))
    p.add_argument("--out", default="call_overhead.json")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    a = p.parse_args()
    manifest = {c["name"]: c for c in json.load(open(os.path.join(a.artifacts, "correctness.json")))}
    lib = fr.Library(os.path.join(a.artifacts, "libcorrectness.so"),
                     runtime=os.path.join(a.artifacts, "libfusion_runtime.so"))
    one = torch.zeros(1, device="cuda")
    torch_op = host_us_per_call(lambda: one.add_(1.0))
    rows = []
    for name in a.cases.split(","):
        c = manifest[name]
        x = make_inputs(c, torch.Generator(device="cuda").manual_seed(0))
        y = make_outputs(c)
        args = [*x.values(), *y.values()]
        fn = lib.function(name, c["signature"])
        call = lambda: fn(*args)  # noqa: E731
        call()
        torch.cuda.synchronize()
        kernel, how = kernel_ms(call)
        called = do_bench(call, warmup=25, rep=200, return_mode="median")
        host = host_us_per_call(call)
        python = python_us_per_call(fn, args)
        long_way = lib.function(name, c["signature"])
        long_way._invoke = None
        host_long = host_us_per_call(lambda: long_way(*args))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        replay = do_bench(graph.replay, warmup=25, rep=200, return_mode="median")
        torch.cuda.synchronize()
        row = dict(name=name, m=c["m"], k=c["k"], n=c["n"], tensors=len(fn.specs),
                   words=fn._word_count, kernel_ms=kernel, kernel_timing=how, call_ms=called,
                   host_us_per_call=host, host_us_long_way=host_long,
                   python_us_per_call=python,
                   runtime_us_per_call=None if python is None else host - python,
                   graph_replay_ms=replay, graph_replay_us=replay * 1e3,
                   call_over_kernel=called / kernel, torch_op_host_us=torch_op)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump(dict(date=datetime.date.today().isoformat(), commit=a.commit,
                       gpu=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows),
                  f, indent=1)
    print(f"\n{'case':26} {'kernel ms':>9} {'call ms':>8} {'host us':>8} {'(python':>8} "
          f"{'runtime)':>8} {'long way':>8} {'graph us':>8} {'call/kernel':>11}")
    for r in rows:
        python = r["python_us_per_call"]
        runtime = r["runtime_us_per_call"]
        print(f"{r['name']:26} {r['kernel_ms']:9.4f} {r['call_ms']:8.4f} "
              f"{r['host_us_per_call']:8.1f} {python if python is not None else float('nan'):8.1f} "
              f"{runtime if runtime is not None else float('nan'):8.1f} "
              f"{r['host_us_long_way']:8.1f} {r['graph_replay_us']:8.1f} "
              f"{r['call_over_kernel']:11.2f}")
    print(f"(a one-element torch add_: {torch_op:.1f} us of host time per call)")


if __name__ == "__main__":
    main()
