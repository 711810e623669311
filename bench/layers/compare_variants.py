#!/usr/bin/env python3
"""Times hand-configured variants of a layer program against its default
fused library and torch.compile, in interleaved rounds, after a float64
check: for trying a kernel configuration (a `#fusion.kernel_config` edited
into the planned IR and lowered without re-planning) before teaching the
planner. Each variant is LIBRARY:FUNCTION with the program's signature.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/layers/compare_variants.py \\
        bert_postnorm_h768 build/gpu/exp/libx.so:bert_postnorm_h768_x ...
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


def main():
    art = layers_manifest.artifacts_dir()
    prog = layers_manifest.load_manifest(art)[sys.argv[1]]
    libs = lr.Libraries(art)
    fns = {"default": libs.function(prog, "fused")}
    for spec in sys.argv[2:]:
        path, name = spec.split(":")
        fns[name] = libs.fr.Library(path, runtime=libs.runtime).function(name, prog["signature"])
    x = lr.make_inputs(prog, 65536, torch.Generator(device="cuda").manual_seed(0))
    ref64, ref16 = lr.reference(prog, x, torch.float64), lr.reference(prog, x, torch.bfloat16)
    calls = {}
    for name, fn in fns.items():
        y = lr.make_outputs(prog, 65536)
        calls[name] = (lambda fn=fn, y=y: fn(*x.values(), *y.values()))
        calls[name]()
        torch.cuda.synchronize()
        res = lr.check(prog, x, y, ref64, ref16)
        print(f"{name}: rel err {res['rel_err']:.3e} ok {res['ok']}", flush=True)
    module, args = lr.build_module(prog, x)
    compiled = bu.compile_fresh(module)
    compiled(*args)
    calls["torch.compile"] = lambda: compiled(*args)
    times = {k: [] for k in calls}
    for _ in range(3):
        for k, c in calls.items():
            times[k].append(bu.bench_ms(c))
    for k, t in times.items():
        print(f"{sys.argv[1]} {k}: " + " ".join(f"{v:.4f}" for v in t), flush=True)


if __name__ == "__main__":
    main()
