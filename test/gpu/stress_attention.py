"""Calls one attention program N times on the same inputs and checks that
every output is free of NaN and bitwise equal to the first: a race in the
kernel shows up as a differing or poisoned call.

    FUSION_GPU_ARTIFACTS=build/gpu python3 test/gpu/stress_attention.py block_kunlun_h2 768 512 200
"""
import sys

import torch

import attention_programs as ap


def main():
    name, batch, lq, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    variant = sys.argv[5] if len(sys.argv) > 5 else ""
    prog = ap.programs()[name]
    fn = ap.function(prog, variant)
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(batch, lq, h, d, device="cuda", generator=g).bfloat16()
    k = (torch.randn(batch, kv, h, d, device="cuda", generator=g) * d ** -0.5).bfloat16()
    v = torch.randn(batch, kv, h, dv, device="cuda", generator=g).bfloat16()
    params = ([(1 + 0.1 * torch.randn(h * d, device="cuda", generator=g)).bfloat16()
               for _ in range(3)] if prog.get("block") else [])
    first = None
    bad = 0
    for i in range(calls):
        out = torch.full((batch, lq, h, dv), float("nan"), dtype=torch.bfloat16, device="cuda")
        fn(q, k, v, *params, out)
        torch.cuda.synchronize()
        nan = int(torch.isnan(out).sum())
        if first is None:
            first = out
        diff = int((out != first).sum()) if nan == 0 else -1
        if nan or diff:
            bad += 1
            if bad <= 5:
                idx = torch.nonzero(torch.isnan(out) | (out != first))[:4].tolist()
                print(f"call {i}: {nan} NaN, {diff} elements differ from call 0; first at {idx}")
    print(f"{name}{variant} B={batch} Lq={lq}: {calls} calls, {bad} bad")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
