#!/usr/bin/env python3
"""Runs one layer program's fused library a few times at M = 65536 (or
the third argument), for a profiler (ncu, nsys) to attach to:

    FUSION_GPU_ARTIFACTS=build/gpu ncu --section SpeedOfLight \\
        python3 bench/layers/profile_layer.py bert_postnorm_h768 3
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
    name = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 65536
    art = layers_manifest.artifacts_dir()
    prog = layers_manifest.load_manifest(art)[name]
    fn = lr.Libraries(art).function(prog, "fused")
    if fn is None:
        sys.exit(f"profile_layer: no fused library for {name}")
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(0))
    y = lr.make_outputs(prog, m)
    for _ in range(reps):
        fn(*x.values(), *y.values())
    torch.cuda.synchronize()
    print(name, "ran", reps, "times")


if __name__ == "__main__":
    main()
