#!/usr/bin/env python3
"""Runs one GEMM back to back for a few seconds while nvidia-smi samples the
SM clock and the board power, for ours (a bench case) and cuBLAS (torch.mm on
the same operands): whether a GEMM runs at the power cap, and at what clock.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/gemm/clock_probe.py bench_gemm_4096 ...
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import fusion_runtime as fr  # noqa: E402
from fused_matmul_reference import make_inputs, make_outputs  # noqa: E402

art = os.environ.get("FUSION_GPU_ARTIFACTS", os.path.join(REPO, "build", "gpu"))
cases = {c["name"]: c for c in json.load(open(os.path.join(art, "bench.json")))}
lib = fr.Library(os.path.join(art, "libbench.so"),
                 runtime=os.path.join(art, "libfusion_runtime.so"))


def probe(label, fn, seconds=3.0):
    fn()
    torch.cuda.synchronize()
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
         "--format=csv,noheader,nounits", "-lms", "100"],
        stdout=subprocess.PIPE, text=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = 0
    t0 = time.perf_counter()
    start.record()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            fn()
        n += 10
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    smi.terminate()
    out = smi.communicate()[0]
    rows = [r.split(", ") for r in out.strip().splitlines()]
    rows = rows[len(rows) // 3:]  # skip the ramp
    clk = [float(r[0]) for r in rows if r[0].strip().isdigit()]
    pw = [float(r[1]) for r in rows if r[1].replace(".", "").strip().isdigit()]
    reasons = sorted({r[3] for r in rows if len(r) > 3})
    ms = start.elapsed_time(end) / n
    print(f"{label:28s} {ms:.4f} ms/call  sm clock {statistics.median(clk) if clk else -1:.0f} MHz"
          f"  power {statistics.median(pw) if pw else -1:.0f} W  throttle {reasons}", flush=True)
    time.sleep(1.0)


gen = torch.Generator(device="cuda").manual_seed(0)
for name in sys.argv[1:]:
    c = cases[name]
    x = make_inputs(c, gen)
    y = make_outputs(c)
    fn = lib.function(name, c["signature"])
    a_, b_ = x["a"], x["b"].t() if c.get("transpose_rhs") else x["b"]
    for r in range(2):
        probe(f"{name} ours", lambda: fn(*x.values(), *y.values()))
        probe(f"{name} cublas", lambda: torch.mm(a_, b_))
