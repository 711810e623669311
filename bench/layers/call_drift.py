#!/usr/bin/env python3
"""Does the time of a layer call drift after many calls or after profiling?
For each named program (fused): do_bench of the loader call, then again, then
after N back-to-back asynchronous calls, then after bench_util.kernel_ms (the
profiler), then after a CUDA-event loop of 50 calls without L2 flush; each
stage printed. A diagnostic for bench_layers' rounds (the first fused_call
faster than later ones).

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/layers/call_drift.py llama_prenorm_h4096
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "runtime", "python"))

import torch  # noqa: E402

import bench_util as bu  # noqa: E402
import layers_manifest  # noqa: E402
import layers_ref as lr  # noqa: E402


def events_ms(fn, n=50):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n


def main():
    art = layers_manifest.artifacts_dir()
    programs = layers_manifest.load_manifest(art)
    libs = lr.Libraries(art)
    for name in sys.argv[1:]:
        prog = programs[name]
        for variant in ("fused", "unfused"):
            fn = libs.function(prog, variant)
            x = lr.make_inputs(prog, 65536, torch.Generator(device="cuda").manual_seed(0))
            y = lr.make_outputs(prog, 65536)
            call = lambda: fn(*x.values(), *y.values())  # noqa: E731
            call()
            torch.cuda.synchronize()
            out = [("do_bench 1", bu.bench_ms(call)), ("do_bench 2", bu.bench_ms(call)),
                   ("events 50", events_ms(call))]
            for _ in range(3000):
                call()
            torch.cuda.synchronize()
            out += [("after 3000 calls: do_bench", bu.bench_ms(call)),
                    ("events 50", events_ms(call))]
            out.append(("kernel_ms (profiler)", bu.kernel_ms(call)))
            out += [("after profiler: do_bench", bu.bench_ms(call)),
                    ("events 50", events_ms(call)), ("do_bench", bu.bench_ms(call))]
            print(name, variant, " | ".join(f"{k} {v:.3f}" for k, v in out), flush=True)


if __name__ == "__main__":
    main()
