#!/usr/bin/env python3
"""Times the compiled fused-matmul kernels against cuBLAS (torch.mm) and
torch.compile (Inductor) of the unfused pair, per docs/PERF.md, and writes
bench/results-style JSON to --out.

Ours is timed as the device time of its kernels (profiler CUDA activity),
with the baselines' do_bench warmup (25 ms) and repetitions (200 ms, median
per call), comparable to their CUDA-event medians. The time the user sees is
reported too: ours_call_ms, do_bench over the loader call itself (asynchronous
on PyTorch's current stream: TMA descriptor encoding, launch and host overhead
included), and ours_sync_call_ms, the wall-clock median of a call followed by
a synchronization.

    python3 bench/bench_fused_matmul.py --artifacts build/gpu --out bench.json
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import fusion_runtime as fr  # noqa: E402
from fused_matmul_reference import half_dtype, make_inputs, make_outputs, reference, rel_error  # noqa: E402


def kernel_ms(fn, warmup_ms=25.0, rep_ms=200.0, match="_kernel"):
    """Device time of our kernels per call (kernels named <function>_kernel<i>;
    `match` picks others by a substring of their name, e.g. "triton" for
    torch.compile's),
    from the profiler's CUDA activity records, timed like the baselines'
    do_bench: calls for warmup_ms first, then the median over the calls of
    rep_ms (at least 10): the kernels alone, without the host's part of a
    call (which ours_call_ms includes). Returns (ms, how): how is "median", or "mean"
    where the records could not be split per call."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    per_call = max((time.perf_counter() - t0) * 1e3, 1e-3)
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < warmup_ms:
        fn()
    reps = max(10, min(500, int(rep_ms / per_call)))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    kernels = sorted((e for e in prof.events()
                      if match in e.name and getattr(e, "device_type", None) == cuda),
                     key=lambda e: e.time_range.start)
    if kernels and len(kernels) % reps == 0:
        k = len(kernels) // reps
        calls = [sum(e.time_range.elapsed_us() for e in kernels[i * k:(i + 1) * k])
                 for i in range(reps)]
        return statistics.median(calls) / 1e3, "median"
    total_us = 0.0
    for e in prof.key_averages():
        if "_kernel" in e.key:
            total_us += getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
    return total_us / reps / 1e3, "mean"


def wall_ms(fn, reps=30, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def compile_fresh(fn):
    """torch.compile specialized to this case. Dynamo caches compiled code per
    code object, and every case's lambda shares one: without a reset, later
    cases would recompile with dynamic shapes and, past the recompile limit,
    run eagerly, which made the baselines of later cases slower."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--artifacts", default=os.path.join(REPO, "build", "gpu"))
    p.add_argument("--out", default="bench.json")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--only", default="", help="run only the cases whose name matches this regex")
    p.add_argument("--rounds", type=int, default=2,
                   help="interleaved rounds per case (>= 2; more where the GEMM's own "
                        "run-to-run spread hides the norm, as at N = 4096)")
    a = p.parse_args()
    if a.rounds < 2:
        p.error(f"--rounds: expected at least 2 (the spread needs two), but got {a.rounds}")
    cases = json.load(open(os.path.join(a.artifacts, "bench.json")))
    cases = [c for c in cases if re.search(a.only, c["name"])]
    lib = fr.Library(os.path.join(a.artifacts, "libbench.so"),
                     runtime=os.path.join(a.artifacts, "libfusion_runtime.so"))
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for c in cases:
        x = make_inputs(c, gen)
        y = make_outputs(c)
        fn = lib.function(c["name"], c["signature"])
        call = lambda: fn(*x.values(), *y.values())
        call()
        torch.cuda.synchronize()
        err = rel_error(y["y"], reference(c, x, torch.float64)["y"])
        err_torch = rel_error(reference(c, x, half_dtype(c))["y"],
                              reference(c, x, torch.float64)["y"])
        # B as a [K, N] operand: a transposed view when the case's B is [N, K]
        # (cuBLAS then runs its own transposed-B GEMM).
        a_, b_ = x["a"], x["b"].t() if c.get("transpose_rhs") else x["b"]
        eps = c["eps"]
        if c["prologue"] == "rms_norm":
            norm_input = a_
            norm = compile_fresh(lambda t: F.rms_norm(t, (t.shape[-1],), eps=c["prologue_eps"]))
            pair = compile_fresh(lambda t, w: F.rms_norm(t, (t.shape[-1],), eps=c["prologue_eps"]) @ w)
        elif c["epilogue"] in ("rms_norm", "layer_norm"):
            # The post-norm of the epilogue, unfused: torch.compile of the norm
            # alone (on the GEMM's output) and of the GEMM + norm pair.
            # With a residual, weight and bias, the unfused pair is
            # norm(t @ w + residual) * weight + bias (Inductor fuses the add
            # into its norm kernel).
            layer = c["epilogue"] == "layer_norm"
            res, g, nb = x.get("r"), x.get("w"), x.get("nb")

            def post_norm(t):
                if res is not None:
                    t = t + res
                if layer:
                    return F.layer_norm(t, (t.shape[-1],), g, nb, eps=eps)
                return F.rms_norm(t, (t.shape[-1],), g, eps=eps)
            norm_input = torch.mm(a_, b_)
            norm = compile_fresh(post_norm)
            pair = compile_fresh(lambda t, w: post_norm(t @ w))
        else:
            norm = pair = None
        # Interleaved rounds (PERF.md): a difference smaller than the
        # spread between them is noise.
        rounds = []
        for _ in range(a.rounds):
            r = dict(cublas=do_bench(lambda: torch.mm(a_, b_), warmup=25, rep=200,
                                     return_mode="median"))
            if norm:
                r["norm"] = do_bench(lambda: norm(norm_input), warmup=25, rep=200,
                                     return_mode="median")
                r["pair"] = do_bench(lambda: pair(a_, b_), warmup=25, rep=200,
                                     return_mode="median")
            r["ours"], ours_how = kernel_ms(call)
            rounds.append(r)
        mean = {key: statistics.fmean(r[key] for r in rounds) for key in rounds[0]}
        spread = {key: max(r[key] for r in rounds) - min(r[key] for r in rounds)
                  for key in rounds[0]}
        t_mm, t_ours = mean["cublas"], mean["ours"]
        t_norm, t_pair = mean.get("norm"), mean.get("pair")
        # The time the user sees: the loader call, timed like the baselines
        # (do_bench's CUDA events around back-to-back calls on the current
        # stream: host overhead shows where it exceeds the kernel), and the
        # wall-clock time of a call that waits for its result.
        t_call = do_bench(call, warmup=25, rep=200, return_mode="median")
        t_sync = wall_ms(lambda: (call(), torch.cuda.synchronize()))
        row = dict(name=c["name"], m=c["m"], k=c["k"], n=c["n"], prologue=c["prologue"],
                   epilogue=c["epilogue"], ours_ms=t_ours, ours_call_ms=t_call,
                   ours_sync_call_ms=t_sync, cublas_ms=t_mm,
                   norm_ms=t_norm, inductor_pair_ms=t_pair,
                   ours_over_cublas=t_mm / t_ours,
                   tflops=2 * c["m"] * c["k"] * c["n"] / t_ours / 1e9,
                   rel_err=err, torch_bf16_rel_err=err_torch,
                   ours_timing=ours_how, rounds=rounds)
        if t_norm:
            row["hidden_pct"] = 100 * (t_mm + t_norm - t_ours) / t_norm
            row["speedup_vs_inductor"] = t_pair / t_ours
            # Faster than the pair by more than either's round-to-round spread.
            noise = max(spread["pair"], spread["ours"])
            row["noise_ms"] = noise
            row["beats_inductor_beyond_noise"] = t_pair - t_ours > noise
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = dict(date=datetime.date.today().isoformat(), commit=a.commit,
                  gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                  timing="ours_ms: kernel device time (profiler records; after 25 ms of "
                         "warmup calls, the median per call over 200 ms of calls, or the mean "
                         "where ours_timing says so); "
                         "ours_call_ms: do_bench median of the loader call (asynchronous on "
                         "the current stream); ours_sync_call_ms: wall-clock median of a call "
                         "followed by a synchronization; "
                         "baselines: do_bench CUDA-event medians of a torch.compile "
                         "compiled fresh and static per case; every time is the mean of "
                         f"{a.rounds} interleaved rounds (listed in rounds); noise_ms is the "
                         "larger spread (max - min over the rounds) of ours and the pair",
                  rows=rows)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\n{'case':28} {'ours ms':>8} {'cuBLAS':>8} {'ours/cuBLAS':>11} {'hidden%':>8} {'vs Inductor':>11} {'noise ms':>8} {'err':>9}")
    for r in rows:
        print(f"{r['name']:28} {r['ours_ms']:8.3f} {r['cublas_ms']:8.3f} {r['ours_over_cublas']:11.2f} "
              f"{r.get('hidden_pct', float('nan')):8.1f} {r.get('speedup_vs_inductor', float('nan')):11.2f} "
              f"{r.get('noise_ms', float('nan')):8.3f} {r['rel_err']:9.2e}"
              + ("" if r.get("beats_inductor_beyond_noise", True) else "  (within noise)"))


if __name__ == "__main__":
    main()
