"""Runs one attention program once on random inputs, without PyTorch's
kernels in the process beyond the inputs' creation (no cuBLAS): the
compute-sanitizer runner for the attention kernels (gdpa_grad_* programs:
the backward, dense or jagged; block_jagged_*: the block with jagged q;
kunlun_train_* and kunlun_backward_*: the block's training step and
backward).

    FUSION_GPU_ARTIFACTS=build/gpu compute-sanitizer --tool racecheck \\
        python3 test/gpu/run_one_attention.py gdpa_kunlun_h2 4 300
"""
import sys

import torch

import attention_programs as ap


def main():
    name, batch, lq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    variant = sys.argv[4] if len(sys.argv) > 4 else ""  # "_unfused": a block's four kernels
    prog = ap.programs()[name]
    fn = ap.function(prog, variant)
    dt = torch.bfloat16 if prog["dtype"] == "bf16" else torch.float16
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    k = torch.rand(batch, kv, h, d, device="cuda").to(dt)
    v = torch.rand(batch, kv, h, dv, device="cuda").to(dt)
    if prog.get("train") or prog.get("block_grad"):
        # The Kunlun block's training step (out and six gradients) or its
        # backward alone (six gradients, from random saved tensors), every
        # output poisoned.
        q = torch.rand(batch, lq, h, d, device="cuda").to(dt)
        dout = torch.rand(batch, lq, h, d, device="cuda").to(dt)
        w = [torch.rand(h * d, device="cuda").to(dt) for _ in range(3)]
        outs = [torch.full_like(t, float("nan")) for t in (q, q, k, v)]
        outs += [torch.full((h * d,), float("nan"), device="cuda") for _ in range(3)]
        if prog.get("train"):
            fn(q, k, v, *w, dout, *outs)
        else:
            outs = outs[1:]
            saved = [torch.rand_like(q), torch.rand_like(q)]
            saved += [torch.rand(batch, lq, device="cuda") + 0.5 for _ in range(3)]
            fn(dout, q, k, v, w[0], w[2], *saved, *outs)
        torch.cuda.synchronize()
        bad = sum(int(torch.isnan(t).sum()) for t in outs)
        print(f"{name} B={batch} Lq={lq}: {'ok' if bad == 0 else f'{bad} NaN left'}")
        sys.exit(1 if bad else 0)
    if prog.get("jagged"):
        # `batch` sequences of lengths around L_q (some shorter than a
        # window, some empty), 19 tokens past the last offset.
        lengths = [0 if b % 5 == 3 else lq // 2 if b % 2 else lq + 37 for b in range(batch)]
        offsets, bounds = ap.jagged_offsets(prog, lengths)
        tokens = bounds[-1] + 19
    if prog.get("grad"):
        # The backward: dq, dk, dv poisoned, do of the output's shape.
        lead = (tokens,) if prog.get("jagged") else (batch, lq)
        q = torch.rand(*lead, h, d, device="cuda").to(dt)
        do = torch.rand(*lead, h, dv, device="cuda").to(dt)
        grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]
        # A residual of its own (gdpa_grad_*residual*, not do) after the
        # offsets.
        own = [torch.rand_like(q)] if prog.get("residual") == "own" else []
        # The RMSNorm-gradient prologue (gdpa_grad_rms_*, dense): the
        # norm's input and rstd, its weight and then dw (f32) after the grads.
        rms = []
        if prog.get("rms_prologue"):
            rms = [torch.rand_like(do), torch.rand(batch, lq, device="cuda") + 0.5]
            if prog.get("rms_weight"):
                rms.append(torch.rand(h * dv, device="cuda").to(dt))
                grads.append(torch.full((h * dv,), float("nan"), device="cuda"))
        fn(do, q, k, v, *([offsets] if prog.get("jagged") else []), *own, *rms, *grads)
        torch.cuda.synchronize()
        bad = sum(int(torch.isnan(g).sum()) for g in grads)
        print(f"{name} B={batch} Lq={lq}: {'ok' if bad == 0 else f'{bad} NaN left'}")
        sys.exit(1 if bad else 0)
    if prog.get("jagged"):
        # gdpa, or the jagged block (block_jagged_*: the norms' parameters
        # after the offsets).
        q = torch.rand(tokens, h, d, device="cuda").to(dt)
        out = torch.full((tokens, h, dv), float("nan"), dtype=dt, device="cuda")
        params = [torch.rand(h * d, device="cuda").to(dt) for _ in range(3)] if prog.get("block") else []
        # gdpa_*residual* with a residual of its own: after the offsets.
        own = [torch.rand_like(out)] if prog.get("residual") == "own" else []
        fn(q, k, v, offsets, *params, *own, out)
    else:
        q = torch.rand(batch, lq, h, d, device="cuda").to(dt)
        out = torch.full((batch, lq, h, dv), float("nan"), dtype=dt, device="cuda")
        params = [torch.rand(h * d, device="cuda").to(dt) for _ in range(3)] if prog.get("block") else []
        own = [torch.rand_like(out)] if prog.get("residual") == "own" else []
        fn(q, k, v, *params, *own, out)
    torch.cuda.synchronize()
    bad = int(torch.isnan(out).sum())
    print(f"{name} B={batch} Lq={lq}: {'ok' if bad == 0 else f'{bad} NaN left'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
