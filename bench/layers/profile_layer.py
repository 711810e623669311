#!/usr/bin/env python3
"""Runs one layer program's fused library a few times at M = 65536 (or
the third argument), for a profiler (ncu, nsys) to attach to:

    FUSION_GPU_ARTIFACTS=build/gpu ncu --section SpeedOfLight \\
        python3 bench/layers/profile_layer.py bert_postnorm_h768 3

With --compiled, runs torch.compile of the same PyTorch module instead (the
baseline's kernels, for the same profiler; its first call compiles and
autotunes). Both warm up twice, then call cudaProfilerStart before the
timed calls: run ncu with --profile-from-start off to see only those.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "runtime", "python"))

import torch  # noqa: E402

import layers_manifest  # noqa: E402
import layers_ref as lr  # noqa: E402


def main():
    compiled = "--compiled" in sys.argv
    argv = [a for a in sys.argv[1:] if a != "--compiled"]
    name = argv[0]
    reps = int(argv[1]) if len(argv) > 1 else 3
    m = int(argv[2]) if len(argv) > 2 else 65536
    art = layers_manifest.artifacts_dir()
    prog = layers_manifest.load_manifest(art)[name]
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(0))
    if compiled:
        module, args = lr.build_module(prog, x)
        fn = torch.compile(module)
        with torch.no_grad():
            for _ in range(2):
                fn(*args)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            for _ in range(reps):
                fn(*args)
        torch.cuda.synchronize()
        print(name, "(torch.compile) ran", reps, "times")
        return
    fn = lr.Libraries(art).function(prog, "fused")
    if fn is None:
        sys.exit(f"profile_layer: no fused library for {name}")
    y = lr.make_outputs(prog, m)
    for _ in range(2):
        fn(*x.values(), *y.values())
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(reps):
        fn(*x.values(), *y.values())
    torch.cuda.synchronize()
    print(name, "ran", reps, "times")


if __name__ == "__main__":
    main()
