#!/usr/bin/env python3
"""Does the time of a layer call drift after many calls or after profiling?
For each named program (fused): do_bench of the loader call, then again, then
after N back-to-back asynchronous calls, then after bench_util.kernel_ms (the
profiler), then after cuBLAS's linear and after torch.compile's module on
the same inputs (what bench_layers times between its rounds); each stage
printed, with CUDA-event loops of 50 calls (no L2 flush) between. A diagnostic for bench_layers' rounds (the first fused_call
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
    for name in [a for a in sys.argv[1:] if a not in ("fused", "unfused")]:
        prog = programs[name]
        for variant in sys.argv[1:2] if sys.argv[1] in ("fused", "unfused") else ("fused",):
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
            # What bench_layers runs between its rounds: cuBLAS's linear and
            # torch.compile's module on the same inputs.
            xx, w = x["x"], x["w"]
            out.append(("cuBLAS linear", bu.bench_ms(lambda: torch.nn.functional.linear(xx, w))))
            out += [("after cuBLAS: do_bench", bu.bench_ms(call)), ("do_bench", bu.bench_ms(call))]
            module, args = lr.build_module(prog, x)
            compiled = bu.compile_fresh(module)
            compiled(*args)
            out.append(("torch.compile", bu.bench_ms(lambda: compiled(*args))))
            out += [("after torch.compile: do_bench", bu.bench_ms(call)),
                    ("events 50", events_ms(call)), ("do_bench", bu.bench_ms(call))]
            print(name, variant, " | ".join(f"{k} {v:.3f}" for k, v in out), flush=True)


if __name__ == "__main__":
    main()
