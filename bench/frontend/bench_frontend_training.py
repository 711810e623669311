#!/usr/bin/env python3
"""Training through the front end on the GPU: a forward and backward step
(torch.autograd.grad of the output with a given gradient, every leaf: the
input and the parameters) of the modules of test/gpu/test_frontend_training_gpu.py
(Llama's pre-norm, BERT's post-norm, nn.Linear with bias; bf16, hidden 1024,
65536 tokens; and the FlashNormAttention block, B 768, L_q 512, 2 heads of 128), timed as the user sees it (do_bench of the whole step, L2
flushed, interleaved rounds: bench/layers/bench_util.run_rounds) for
fusion_compiler.compile's module (our training forward and backward
kernels), eager PyTorch and torch.compile of the same module.

The libraries come from the directory the test's --prepare fills (the GPU
machine has no compiler):

    FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu \\
        python3 bench/frontend/bench_frontend_training.py --json OUT.json --commit abc1234
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

TIMING = ("*_ms: do_bench median (L2 flushed) of one training step, torch.autograd.grad of "
          "the module's output for a fixed output gradient with respect to the input(s) and "
          "every parameter, the mean of interleaved rounds (bench_util.run_rounds); ours: "
          "fusion_compiler.compile's module (training forward and backward on our kernels)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default="bench_frontend_training.json")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", help="the cases whose name matches this regex")
    a = p.parse_args()
    import torch
    import bench_util as bu
    import test_frontend_training_gpu as t  # the modules, and the libraries' directory
    fc = t.fc
    rows = []
    cases = list(t.CASES) + ["norm_attention_block"]
    if a.only:
        import re
        cases = [c for c in cases if re.search(a.only, c)]
    for name in cases:
        if name == "norm_attention_block":
            # The FlashNormAttention block at Kunlun's B 768, L_q 512, 2 heads of
            # 128, 128 keys.
            m = t.make_block("cuda")
            x = [v.requires_grad_(True) for v in t.make_block_inputs(768, 512, "cuda")]
            dy = torch.randn(x[0].shape, device="cuda", dtype=torch.bfloat16)
        else:
            m = t.make(name, "cuda")
            x = [v.requires_grad_(True) for v in t.make_inputs(name, t.SHAPES["65536"], "cuda")]
            dy = torch.randn(*x[0].shape[:-1], t.H, device="cuda", dtype=torch.bfloat16)
        leaves = x + list(m.parameters())
        errors = {}
        fns = {"eager": m}
        try:
            fns["ours"] = fc.compile(m, tuple(v.detach() for v in x), target="sm_90a",
                                     strict=True, report=False)
        except Exception as e:
            errors["ours"] = bu.error_text(e)
        try:
            fns["compile"] = bu.compile_fresh(m)
        except Exception as e:
            errors["compile"] = bu.error_text(e)

        def step(f):
            return lambda: torch.autograd.grad(f(*x), leaves, dy)
        measurements = []
        for key, f in fns.items():
            try:
                step(f)()
                torch.cuda.synchronize()
                measurements.append((key, bu.bench_ms, step(f)))
            except Exception as e:
                errors[key] = bu.error_text(e)
        mean, spread, rounds = bu.run_rounds(a.rounds, measurements, errors)
        row = dict(name=name, tokens=x[0].shape[0] * x[0].shape[1],
                   h=x[0].shape[-1] * (x[0].shape[-2] if x[0].dim() == 4 else 1), errors=errors,
                   **{f"{k}_ms": v for k, v in mean.items()}, spread_ms=spread, rounds=rounds)
        if "ours" in mean:
            for base in ("compile", "eager"):
                if base in mean:
                    row[f"{base}_over_ours"] = mean[base] / mean["ours"]
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
        bu.write_json(a.json, a, rows, TIMING, complete=name == cases[-1])
    print("| module | ours ms | torch.compile ms | eager ms | compile / ours | eager / ours |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        cell = lambda k, f="{:.3f}": f.format(r[k]) if k in r else "-"
        print(f"| {r['name']} | {cell('ours_ms')} | {cell('compile_ms')} | {cell('eager_ms')} | "
              f"{cell('compile_over_ours', '{:.2f}x')} | {cell('eager_over_ours', '{:.2f}x')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
