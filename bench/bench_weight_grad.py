#!/usr/bin/env python3
"""The weight-gradient GEMM (fusion.matmul {transpose_lhs}, dW = dy^T x,
bench/layers/gen_layers.py linear_wgrad_h{H}) at M = 65536 tokens against
cuBLAS (torch.matmul(dy.T, x), the GEMM nn.Linear's backward runs) and
torch.compile of the same expression: do_bench medians of the calls,
interleaved rounds (bench_util.run_rounds), JSON with date, GPU and commit.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/bench_weight_grad.py --out wgrad.json --commit abc1234
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "layers"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runtime", "python"))
HS = (512, 768, 1024, 2048, 4096)
TIMING = ("ours_ms / cublas_ms / compile_ms: do_bench medians (L2 flushed) of our library call, "
          "torch.matmul(dy.T, x) and torch.compile of it (fresh, static), the mean of "
          "interleaved rounds (bench_util.run_rounds); *_tflops = 2 M H^2 / time")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--m", type=int, default=65536)
    a = p.parse_args()
    import torch

    import bench_util as bu
    import layers_ref as lr

    art = lr.artifacts_dir()
    programs = lr.load_manifest(art)
    libs = lr.Libraries(art)
    rows = []
    for h in HS:
        prog = programs[f"linear_wgrad_h{h}"]
        row = dict(name=prog["name"], h=h, m=a.m, errors={})
        gen = torch.Generator(device="cuda").manual_seed(3)
        dy = torch.randn(a.m, h, generator=gen, device="cuda").bfloat16()
        x = torch.randn(a.m, h, generator=gen, device="cuda").bfloat16()
        dw = torch.empty(h, h, dtype=torch.bfloat16, device="cuda")
        fn = libs.function(prog, "fused")
        compiled = bu.compile_fresh(lambda d, t: d.T @ t)
        mean, spread, _ = bu.run_rounds(a.rounds, [
            ("ours_ms", bu.bench_ms, lambda: fn(dy, x, dw)),
            ("cublas_ms", bu.bench_ms, lambda: torch.matmul(dy.T, x)),
            ("compile_ms", bu.bench_ms, lambda: compiled(dy, x)),
        ], row["errors"])
        row.update(mean)
        row["spread"] = spread
        flops = 2 * a.m * h * h
        for k in ("ours_ms", "cublas_ms", "compile_ms"):
            if k in row:
                row[k.replace("_ms", "_tflops")] = flops / row[k] / 1e9
        if "ours_ms" in row and "cublas_ms" in row:
            row["ours_over_cublas"] = row["cublas_ms"] / row["ours_ms"]
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
               if k != "spread"}, flush=True)
    bu.write_json(a.out, a, rows, TIMING, complete=True)
    print(bu.markdown_table([("H", "h", "{}"), ("ours ms", "ours_ms", "{:.3f}"),
                             ("ours TFLOP/s", "ours_tflops", "{:.0f}"),
                             ("cuBLAS ms", "cublas_ms", "{:.3f}"),
                             ("torch.compile ms", "compile_ms", "{:.3f}"),
                             ("ours / cuBLAS speed", "ours_over_cublas", "{:.2f}")], rows))


if __name__ == "__main__":
    main()
