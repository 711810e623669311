"""A/B of FlashNormAttention block kernels in one run, for a change to the
kernel: lib<name><variant>.so of each variant (the default build's library
is variant "", another build's copied in beside it under a suffix, e.g.
libblock_kunlun_h2_base.so), on the Kunlun block as users write it (B 768,
L_kv 128, D 128, gelu_tanh; L_q 512 at H 2, 1024 at H 4). Per variant: the
user-visible call time (do_bench over the loader call, L2 flushed), the
kernel time (profiler), the relative error against float64; torch.compile
of the same block in the same rounds. Interleaved rounds after a settle
(bench/layers/bench_util.py); JSON with date, GPU and commit.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/attention/ab_block.py \\
        --variants ,_base --rounds 6 --out ab.json --commit abc1234
"""
import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))

CASES = [("block_kunlun_h2", 768, 512), ("block_kunlun_h4", 768, 1024)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variants", default=",_base",
                   help="comma-separated library suffixes ('' is lib<name>.so)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="unknown")
    args = p.parse_args()
    import torch

    import attention_programs as ap
    import bench_util as bu

    variants = args.variants.split(",")
    label = lambda v: v or "_default"  # noqa: E731
    programs = ap.programs()
    rows = []
    for name, batch, lq in CASES:
        prog = programs[name]
        h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
        hd, eps = h * d, prog["eps"]
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(batch, lq, h, d, generator=gen, device="cuda").bfloat16()
        k = (d ** -0.5 * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).bfloat16()
        v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").bfloat16()
        params = [(1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16(),
                  (0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16(),
                  (1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16()]

        def block(q, k, v, lnw, lnb, g):
            ln = torch.nn.functional.layer_norm(q.reshape(batch, lq, hd), (hd,), lnw, lnb,
                                                eps).reshape(q.shape)
            s = torch.einsum("bihd,bjhd->bhij", ln, k) * prog["scale"]
            o = torch.einsum("bhij,bjhe->bihe",
                             torch.nn.functional.gelu(s, approximate="tanh"), v)
            y = torch.nn.functional.rms_norm((o + ln).reshape(batch, lq, hd), (hd,), g, eps)
            return y.reshape(q.shape) + q

        ref = block(q.double(), k.double(), v.double(), *(t.double() for t in params))
        torch_err = ((block(q, k, v, *params).double() - ref).norm() / ref.norm()).item()
        compiled = bu.compile_fresh(block)
        compiled(q, k, v, *params)
        measurements = [("torch_compile_ms", bu.bench_ms, lambda: compiled(q, k, v, *params))]
        errs = {}
        for variant in variants:
            fn = ap.function(prog, variant)
            out = torch.full((batch, lq, h, dv), float("nan"), dtype=torch.bfloat16,
                             device="cuda")
            fn(q, k, v, *params, out)
            torch.cuda.synchronize()
            errs[label(variant)] = ((out.double() - ref).norm() / ref.norm()).item()
            call = lambda fn=fn, out=out: fn(q, k, v, *params, out)  # noqa: E731
            measurements.append((f"call_ms{label(variant)}", bu.bench_ms, call))
            measurements.append((f"kernel_ms{label(variant)}", bu.kernel_ms, call))
        errors = {}
        mean, spread, _ = bu.run_rounds(args.rounds, measurements, errors)
        row = dict(case=name, batch=batch, lq=lq, rel_err=errs, torch_bf16_rel_err=torch_err,
                   mean_ms=mean, spread_ms=spread, errors=errors)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(args.out, "w") as f:
        json.dump(dict(date=datetime.date.today().isoformat(), gpu=torch.cuda.get_device_name(),
                       commit=args.commit,
                       timing=f"do_bench median, L2 flushed; mean of {args.rounds} "
                              "interleaved rounds",
                       rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
