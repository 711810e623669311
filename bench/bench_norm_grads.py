#!/usr/bin/env python3
"""The standalone norm-gradient kernels (fusion.rms_norm_grad with its
weight, fusion.layer_norm_grad with weight and bias gradients) against
PyTorch's backward of the same norm at M = 65536, bf16: our library call
(dx and the parameter gradients, from dy, x and the saved statistics)
against autograd's backward pass in eager mode and under torch.compile (the
forward run once with requires_grad, then torch.autograd.grad timed with
retain_graph: only the backward kernels). Interleaved rounds
(bench_util.run_rounds), JSON with date, GPU and commit.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/bench_norm_grads.py \\
        --out bench_norm_grads.json --commit abc1234
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "layers"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runtime", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test", "gpu"))

HS = (768, 1024, 2048, 4096)
KINDS = ("rms_norm_grad", "layer_norm_grad")
TIMING = ("ours_ms: do_bench median (L2 flushed) of the library call; eager_ms / compile_ms: "
          "do_bench median of torch.autograd.grad(y, (x, weight[, bias]), dy, retain_graph=True) "
          "after a forward of F.rms_norm / F.layer_norm in eager mode / under torch.compile "
          "(fresh, static shapes); the mean of interleaved rounds (bench_util.run_rounds); "
          "*_TBps: bytes of dy, x, dx and the statistics over that time")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--m", type=int, default=65536)
    a = p.parse_args()
    import torch
    import torch.nn.functional as F

    import bench_util as bu
    import layers_ref as lr
    from test_norm_grads_gpu import make_case

    art = lr.artifacts_dir()
    programs = lr.load_manifest(art)
    libs = lr.Libraries(art)
    rows = []
    for kind in KINDS:
        for h in HS:
            prog = programs[f"{kind}_h{h}"]
            row = dict(name=prog["name"], kind=kind, h=h, m=a.m, errors={})
            inputs, _, _ = make_case(prog, a.m, 5)
            outs = lr.make_outputs(prog, a.m)
            fn = libs.function(prog, "fused")
            layer = kind == "layer_norm_grad"
            w = inputs["gamma" if layer else "g"]
            dy, x = inputs["dy"], inputs["x"]

            def forward(xt, wt, bt=None):
                if layer:
                    return F.layer_norm(xt, (h,), wt, bt, prog["eps"])
                return F.rms_norm(xt, (h,), wt, prog["eps"])

            def backward_of(f):
                xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
                params = (xt, wt)
                if layer:
                    bt = torch.zeros(h, dtype=w.dtype, device="cuda", requires_grad=True)
                    params += (bt,)
                y = f(*params)
                return lambda: torch.autograd.grad(y, params, dy, retain_graph=True)

            compiled = bu.compile_fresh(forward)
            measurements = [
                ("ours_ms", bu.bench_ms, lambda: fn(*inputs.values(), *outs.values())),
                ("eager_ms", bu.bench_ms, backward_of(forward)),
                ("compile_ms", bu.bench_ms, backward_of(compiled)),
            ]
            mean, spread, _ = bu.run_rounds(a.rounds, measurements, row["errors"])
            row.update(mean)
            row["spread"] = spread
            nbytes = 3 * a.m * h * 2 + a.m * 4 * (2 if layer else 1)
            for k in ("ours_ms", "eager_ms", "compile_ms"):
                if k in row:
                    row[k.replace("_ms", "_TBps")] = nbytes / row[k] / 1e9
            if "ours_ms" in row and "compile_ms" in row:
                row["compile_over_ours"] = row["compile_ms"] / row["ours_ms"]
            rows.append(row)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
                   if k != "spread"}, flush=True)
    bu.write_json(a.out, a, rows, TIMING, complete=True)
    print(bu.markdown_table([("op", "name", "{}"), ("ours ms", "ours_ms", "{:.3f}"),
                             ("ours TB/s", "ours_TBps", "{:.2f}"),
                             ("eager ms", "eager_ms", "{:.3f}"),
                             ("torch.compile ms", "compile_ms", "{:.3f}"),
                             ("compile / ours", "compile_over_ours", "{:.2f}x")], rows))


if __name__ == "__main__":
    main()
