#!/usr/bin/env python3
"""A/B of two builds of the benchmark suite (bench/gen_cases.py --suite bench)
in one process: our kernels' device time (profiler records, as
bench_fused_matmul.py times them) in rounds interleaved with cuBLAS's
(torch.mm on the same operands, do_bench), per docs/PERF.md. Written for the
B tile's multicast over a pair of CTAs (fusion-compile --multicast) against
the default build, but any two artifact folders compare.

    python3 bench/gemm/ab_multicast.py --base build/mc/base --new build/mc \\
        --only 'bench_gemm_4096$' --rounds 3 --out ab.json
"""
import argparse
import datetime
import json
import os
import re
import statistics
import sys

import torch
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import fusion_runtime as fr  # noqa: E402
from bench_fused_matmul import kernel_ms  # noqa: E402
from fused_matmul_reference import make_inputs, make_outputs, reference, rel_error  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--only", default="")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--out", default="ab.json")
    a = p.parse_args()
    cases = [c for c in json.load(open(os.path.join(a.new, "bench.json")))
             if re.search(a.only, c["name"])]
    libs = {side: fr.Library(os.path.join(d, "libbench.so"),
                             runtime=os.path.join(d, "libfusion_runtime.so"))
            for side, d in (("base", a.base), ("new", a.new))}
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for c in cases:
        x = make_inputs(c, gen)
        ref = reference(c, x, torch.float64)["y"]
        calls, errs = {}, {}
        for side, lib in libs.items():
            y = make_outputs(c)
            fn = lib.function(c["name"], c["signature"])
            calls[side] = (lambda fn=fn, y=y: fn(*x.values(), *y.values()))
            calls[side]()
            torch.cuda.synchronize()
            errs[side] = rel_error(y["y"], ref)
        a_, b_ = x["a"], x["b"].t() if c.get("transpose_rhs") else x["b"]
        rounds = []
        for _ in range(a.rounds):
            r = {}
            r["base"], _ = kernel_ms(calls["base"])
            r["cublas"] = do_bench(lambda: torch.mm(a_, b_), warmup=25, rep=200,
                                   return_mode="median")
            r["new"], _ = kernel_ms(calls["new"])
            rounds.append(r)
        mean = {k: statistics.fmean(r[k] for r in rounds) for k in rounds[0]}
        row = dict(name=c["name"], m=c["m"], k=c["k"], n=c["n"], prologue=c["prologue"],
                   epilogue=c["epilogue"], base_ms=mean["base"], new_ms=mean["new"],
                   cublas_ms=mean["cublas"], base_over_cublas=mean["cublas"] / mean["base"],
                   new_over_cublas=mean["cublas"] / mean["new"],
                   new_speedup=mean["base"] / mean["new"],
                   rel_err_base=errs["base"], rel_err_new=errs["new"], rounds=rounds)
        rows.append(row)
        print(f"{c['name']:24s} base {mean['base']:.4f} new {mean['new']:.4f} cublas "
              f"{mean['cublas']:.4f} ms | new/base {row['new_speedup']:.3f}x | vs cuBLAS "
              f"{row['base_over_cublas']:.3f} -> {row['new_over_cublas']:.3f} | err "
              f"{errs['base']:.2e} {errs['new']:.2e} | rounds "
              + " ".join(f"{r['base']:.4f}/{r['new']:.4f}/{r['cublas']:.4f}" for r in rounds),
              flush=True)
    json.dump(dict(date=datetime.date.today().isoformat(), commit=a.commit,
                   gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                   base=a.base, new=a.new,
                   timing="ours: kernel device time (profiler records, median per call over "
                          "200 ms after 25 ms of warmup, bench_fused_matmul.kernel_ms); cuBLAS: "
                          "do_bench median; rounds interleaved base, cuBLAS, new",
                   results=rows), open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
