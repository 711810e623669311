#!/usr/bin/env python3
"""Which step of bench_layers' rounds slows the fused call that follows it?
Runs bench_layers' measurements of one program in its order (fused call,
fused kernels, unfused call, unfused kernels, eager, torch.compile, cuBLAS
linear), for three rounds, and after each step probes the fused call: a
do_bench (L2 flushed, as bench_layers times it), a CUDA-event loop of 20
calls without the flush, and the host time of one call. Then a profile of
five flushed calls: per call, the GPU time from the flush's end to our first
kernel, and between our kernels (idle gaps inside the call).

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/layers/round_probe.py llama_prenorm_h4096
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "runtime", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import bench_util as bu  # noqa: E402
import layers_manifest  # noqa: E402
import layers_ref as lr  # noqa: E402
from call_drift import events_ms  # noqa: E402


def host_ms(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e3


def gaps(call, name):
    """Per flushed call: (flush end -> first kernel of ours, idle between ours) in us."""
    from torch.profiler import ProfilerActivity, profile
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            flush.zero_()
            call()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    ev = sorted((e for e in prof.events() if getattr(e, "device_type", None) == cuda),
                key=lambda e: e.time_range.start)
    out, last_flush_end, ours = [], None, []
    for e in ev + [None]:
        mine = e is not None and name in e.name
        if not mine and ours:
            first = ours[0].time_range.start - (last_flush_end or ours[0].time_range.start)
            idle = sum(b.time_range.start - a.time_range.end for a, b in zip(ours, ours[1:]))
            out.append((round(first, 1), round(idle, 1), len(ours)))
            ours = []
        if e is None:
            break
        if mine:
            ours.append(e)
        else:
            last_flush_end = e.time_range.end
    cpu = {}
    for e in prof.key_averages():
        if e.key.startswith("cu") or "Memcpy" in e.key or "Alloc" in e.key:
            cpu[e.key] = round(e.cpu_time_total / 5, 1)
    return out, cpu


def main():
    name = sys.argv[1]
    art = layers_manifest.artifacts_dir()
    prog = layers_manifest.load_manifest(art)[name]
    libs = lr.Libraries(art)
    x = lr.make_inputs(prog, 65536, torch.Generator(device="cuda").manual_seed(0))
    calls = {}
    for variant in ("fused", "unfused"):
        fn = libs.function(prog, variant)
        y = lr.make_outputs(prog, 65536)
        calls[variant] = (lambda fn=fn, y=y: fn(*x.values(), *y.values()))
        calls[variant]()
    module, args = lr.build_module(prog, x)
    compiled = bu.compile_fresh(module)
    compiled(*args)
    xx, w = x["x"], x["w"]
    torch.cuda.synchronize()
    fused = calls["fused"]
    steps = [("fused_call", bu.bench_ms, fused), ("fused_kernel", bu.kernel_ms, fused),
             ("unfused_call", bu.bench_ms, calls["unfused"]),
             ("unfused_kernel", bu.kernel_ms, calls["unfused"]),
             ("eager", bu.bench_ms, lambda: module(*args)),
             ("compile", bu.bench_ms, lambda: compiled(*args)),
             ("cublas_linear", bu.bench_ms, lambda: F.linear(xx, w))]
    fn_name = f"{name}_kernel"
    print(name, "start: probe do_bench %.3f events %.3f host %.3f" %
          (bu.bench_ms(fused), events_ms(fused, 20), host_ms(fused)), flush=True)
    print("  gaps", gaps(fused, fn_name), flush=True)
    for r in range(3):
        for key, how, fn in steps:
            t = how(fn)
            print(f"round {r} {key} {t:.3f} -> probe do_bench {bu.bench_ms(fused):.3f} "
                  f"events {events_ms(fused, 20):.3f} host {host_ms(fused):.3f}", flush=True)
    print("  gaps", gaps(fused, fn_name), flush=True)


if __name__ == "__main__":
    main()
