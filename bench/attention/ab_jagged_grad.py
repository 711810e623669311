"""A/B of a jagged gdpa_grad program in one run: lib<name>.so against
lib<name>_base.so (another build's library copied in beside it, as for
ab_block.py), 768 sequences of 256-768 tokens, triton's do_bench of the
library call (no L2 flush), 3 interleaved rounds. Prints JSON: both builds'
times and the largest relative difference between their gradients.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/attention/ab_jagged_grad.py gdpa_grad_jagged_kunlun
"""
import json
import os
import sys

import torch
import triton.testing

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import attention_programs as ap  # noqa: E402


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "gdpa_grad_jagged_kunlun"
    prog = ap.programs()[name]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    batch = 768
    gen = torch.Generator(device="cuda").manual_seed(1)
    lengths = torch.randint(256, 769, (batch,), generator=gen, device="cuda")
    bounds = torch.zeros(batch + 1, dtype=torch.int64, device="cuda")
    bounds[1:] = torch.cumsum(lengths, 0)
    odt = torch.int32 if prog["offsets_dtype"] == "i32" else torch.int64
    offsets, tokens = bounds.to(odt), int(bounds[-1])

    def randn(*shape, scale=1.0):
        return (scale * torch.randn(*shape, device="cuda", generator=gen)).bfloat16()
    q, do = randn(tokens, h, d), randn(tokens, h, dv)
    k, v = randn(batch, kv, h, d, scale=d ** -0.5), randn(batch, kv, h, dv)
    own = [torch.randn_like(q)] if prog.get("residual") == "own" else []
    times, grads = {}, {}
    for variant in ["", "_base"] * 3:
        fn = ap.function(prog, variant)
        out = [torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)]

        def call():
            fn(do, q, k, v, offsets, *own, *out)
        call()
        torch.cuda.synchronize()
        grads[variant] = [t.clone() for t in out]
        times.setdefault(variant or "new", []).append(triton.testing.do_bench(call, warmup=50, rep=300))
    diff = max(float((a.float() - b.float()).abs().max() / (b.float().abs().max() + 1e-9))
               for a, b in zip(grads[""], grads["_base"]))
    print(json.dumps({"name": name, "tokens": tokens, "ms": times,
                      "max_rel_diff_new_vs_base": diff}))


if __name__ == "__main__":
    main()
