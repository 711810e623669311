#!/usr/bin/env python3
"""fusion.gdpa on the H200 (issue 17), standalone and in the Kunlun
attention block (LayerNorm(q) -> gdpa -> + ln_q -> RMSNorm -> + q, the
block's programs in bench/attention/gen_attention.py), against PyTorch: the
compiled library called through the loader (the user-visible time: do_bench
over the call, L2 flushed) and our kernel's own time (profiler), against
torch.compile (Inductor) and eager PyTorch of the same function
act(scale q k^T) v, written as HSTU-style users write it (two einsums and
the activation; jagged q through a padded dense tensor). Interleaved rounds after a settle (bench/layers/bench_util.py,
docs/PERF.md). Reports ms, TFLOP/s and HBM bandwidth (q, k, v read once,
the output written once) and writes JSON. The backward (fusion.gdpa_grad,
dq, dk, dv) against torch.compile's and eager autograd's backward of the
same function (bench_grad); the Kunlun block's backward and training step
against torch.compile's of the same block (bench_block_grad).

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/bench_attention.py --out r.json --commit SHA
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "layers"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))

import torch  # noqa: E402

import attention_programs as ap  # noqa: E402
import bench_util as bu  # noqa: E402

# (program, library variant, B, L_q): a block fused (FlashNormAttention) and
# "_unfused" (its four kernels: the gdpa adds ln_q as its residual).
CASES = [("gdpa_kunlun_h2", "", 768, 512), ("gdpa_kunlun_h4", "", 768, 1024),
         ("block_kunlun_h2", "", 768, 512), ("block_kunlun_h4", "", 768, 1024),
         ("block_kunlun_h2", "_unfused", 768, 512), ("block_kunlun_h4", "_unfused", 768, 1024)]


def add_rates(row, mean, flops, nbytes):
    """TFLOP/s and TB/s of our call, and its speedups, where measured."""
    if "ours_call_ms" not in mean:
        return
    t = mean["ours_call_ms"]
    row["ours_tflops"] = flops / t / 1e9
    row["ours_tbps"] = nbytes / t / 1e9
    if "torch_compile_ms" in mean:
        row["speedup_vs_compile"] = mean["torch_compile_ms"] / t
    if "eager_ms" in mean:
        row["speedup_vs_eager"] = mean["eager_ms"] / t


def activation(name, x):
    if name == "gelu_tanh":
        return torch.nn.functional.gelu(x, approximate="tanh")
    if name == "silu":
        return torch.nn.functional.silu(x)
    if name == "relu":
        return torch.relu(x)
    if name == "gelu":
        return torch.nn.functional.gelu(x)
    return x


def built(programs, name, variant, say=True):
    """(program, compiled function) of lib<name><variant>.so, or None where
    the program or its library is missing (said when `say`)."""
    prog = programs.get(name)
    if prog is None or not os.path.exists(ap.library_path(name, variant)):
        if say:
            print(f"skipped: {name}{variant} not built")
        return None
    return prog, ap.function(prog, variant)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", action="append", default=[],
                        choices=["forward", "jagged", "grad", "block_grad"],
                        help="run only these parts (default: all)")
    parser.add_argument("--extra-variant", action="append", default=[],
                        help="also time the programs from lib<name><SUFFIX>.so where built "
                             "(e.g. a library of the previous compiler, for an A/B in the "
                             "same run)")
    args = parser.parse_args()
    programs = ap.programs()
    rows = []
    cases = CASES + [(name, suffix, batch, lq) for suffix in args.extra_variant
                     for name, variant, batch, lq in CASES if variant == ""]
    parts = set(args.only or ["forward", "jagged", "grad", "block_grad"])
    for name, variant, batch, lq in cases if "forward" in parts else []:
        found = built(programs, name, variant)
        if found is None:
            continue
        prog, fn = found
        h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
        act, scale = prog["activation"], prog["scale"]
        gen = torch.Generator(device="cuda").manual_seed(0)
        spread = (d * scale ** 2) ** -0.25 if not prog.get("block") else 1.0
        q = (spread * torch.randn(batch, lq, h, d, generator=gen, device="cuda")).bfloat16()
        kscale = spread if not prog.get("block") else d ** -0.5
        k = (kscale * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).bfloat16()
        v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").bfloat16()
        out = torch.empty(batch, lq, h, dv, dtype=torch.bfloat16, device="cuda")
        hd = h * d
        params = []
        if prog.get("block"):
            params = [(1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16(),
                      (0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16(),
                      (1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16()]

        def attention(q, k, v):
            s = torch.einsum("bihd,bjhd->bhij", q, k) * scale
            return torch.einsum("bhij,bjhe->bihe", activation(act, s), v)

        def module(q, k, v, *p):
            if not p:
                return attention(q, k, v)
            eps = prog["eps"]
            b_, l_ = q.shape[0], q.shape[1]
            ln = torch.nn.functional.layer_norm(q.reshape(b_, l_, hd), (hd,), p[0], p[1], eps)
            ln = ln.reshape(q.shape)
            y = torch.nn.functional.rms_norm((attention(ln, k, v) + ln).reshape(b_, l_, hd),
                                             (hd,), p[2], eps)
            return y.reshape(q.shape) + q

        compiled = bu.compile_fresh(module)
        compiled(q, k, v, *params)
        errors = {}
        ours = lambda: fn(q, k, v, *params, out)  # noqa: E731
        measurements = [("ours_call_ms", bu.bench_ms, ours),
                        ("ours_kernel_ms", bu.kernel_ms, ours),
                        ("torch_compile_ms", bu.bench_ms, lambda: compiled(q, k, v, *params)),
                        ("eager_ms", bu.bench_ms, lambda: module(q, k, v, *params))]
        mean, spread_ms, rounds = bu.run_rounds(args.rounds, measurements, errors)
        ours()
        torch.cuda.synchronize()
        ref = module(q.double(), k.double(), v.double(), *(p.double() for p in params))
        ours_err = ((out.double() - ref).norm() / ref.norm()).item()
        flops = 2.0 * batch * h * lq * kv * (d + dv)
        nbytes = 2 * (q.numel() + k.numel() + v.numel() + out.numel())
        row = dict(case=name + variant, batch=batch, lq=lq, heads=h, d=d, dv=dv, kv=kv, activation=act,
                   errors=errors, spread_ms=spread_ms, rounds=rounds, **mean)
        row["ours_rel_err"] = ours_err
        add_rates(row, mean, flops, nbytes)
        rows.append(row)
        bu.write_json(args.out, args, rows, "do_bench median, L2 flushed; mean of rounds", False)
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}, default=str))
    for part, bench in (("jagged", bench_jagged), ("grad", bench_grad),
                        ("block_grad", bench_block_grad)):
        if part in parts:
            bench(args, programs, rows)
    bu.write_json(args.out, args, rows, "do_bench median, L2 flushed; mean of rounds", True)
    print(bu.markdown_table(
        [("case", "case", None), ("B", "batch", None), ("Lq", "lq", None),
         ("ours call ms", "ours_call_ms", "{:.3f}"), ("ours kernel ms", "ours_kernel_ms", "{:.3f}"),
         ("torch.compile ms", "torch_compile_ms", "{:.3f}"), ("eager ms", "eager_ms", "{:.3f}"),
         ("vs compile", "speedup_vs_compile", "{:.2f}x"),
         ("ours fwd+bwd ms", "ours_train_ms", "{:.3f}"),
         ("compile fwd+bwd ms", "torch_compile_train_ms", "{:.3f}"),
         ("fwd+bwd vs compile", "train_speedup_vs_compile", "{:.2f}x"),
         ("TFLOP/s", "ours_tflops", "{:.0f}"),
         ("TB/s", "ours_tbps", "{:.2f}")], rows))


# Jagged q as HSTU-style recommenders hold it: B sequences of lengths drawn
# uniformly from [L/2, 3L/2] concatenated, keys and values dense per
# sequence. PyTorch's way (what those users write without a jagged kernel):
# scatter q into a zero-padded [B, L_max, H, D], the dense attention, gather
# the sequences' rows back (indices computed once, outside the timing).
JAGGED_CASES = [("gdpa_jagged_kunlun", 768, 512), ("block_jagged_kunlun_h2", 768, 512),
                ("block_jagged_d64_kv40", 768, 512)]


def bench_jagged(args, programs, rows):
    cases = [(name, variant, batch, mean_len) for name, batch, mean_len in JAGGED_CASES
             for variant in [""] + args.extra_variant]
    for name, variant, batch, mean_len in cases:
        found = built(programs, name, variant)
        if found is None:
            continue
        prog, fn = found
        h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
        act, scale = prog["activation"], prog["scale"]
        block = bool(prog.get("block"))  # the FlashNormAttention block, jagged
        gen = torch.Generator(device="cuda").manual_seed(0)
        lengths = torch.randint(mean_len // 2, 3 * mean_len // 2 + 1, (batch,), generator=gen,
                                device="cuda")
        offsets = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
        offsets[1:] = lengths.cumsum(0)
        tokens, lmax = int(offsets[-1]), int(lengths.max())
        spread = (d * scale ** 2) ** -0.25 if not block else 1.0
        kscale = spread if not block else d ** -0.5
        q = (spread * torch.randn(tokens, h, d, generator=gen, device="cuda")).bfloat16()
        k = (kscale * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).bfloat16()
        v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").bfloat16()
        out = torch.empty(tokens, h, dv, dtype=torch.bfloat16, device="cuda")
        seq = torch.repeat_interleave(torch.arange(batch, device="cuda"), lengths)
        pos = torch.arange(tokens, device="cuda") - offsets[:-1].long()[seq]
        hd = h * d
        params = []
        if block:
            params = [(1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16(),
                      (0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16(),
                      (1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16()]

        def padded(q, k, v, *p):
            dense = q.new_zeros(batch, lmax, h, d)
            dense[seq, pos] = q
            if p:  # the block: LayerNorm of q, attention, residual, RMSNorm, residual
                eps = prog["eps"]
                ln = torch.nn.functional.layer_norm(dense.reshape(batch, lmax, hd), (hd,),
                                                    p[0], p[1], eps).reshape(dense.shape)
            else:
                ln = dense
            s_ = torch.einsum("bihd,bjhd->bhij", ln, k) * scale
            o = torch.einsum("bhij,bjhe->bihe", activation(act, s_), v)
            if p:
                o = torch.nn.functional.rms_norm((o + ln).reshape(batch, lmax, hd), (hd,), p[2],
                                                 eps).reshape(dense.shape) + dense
            return o[seq, pos]

        compiled = bu.compile_fresh(padded)
        compiled(q, k, v, *params)
        errors = {}
        ours = lambda: fn(q, k, v, offsets, *params, out)  # noqa: E731
        measurements = [("ours_call_ms", bu.bench_ms, ours),
                        ("ours_kernel_ms", bu.kernel_ms, ours),
                        ("torch_compile_ms", bu.bench_ms, lambda: compiled(q, k, v, *params)),
                        ("eager_ms", bu.bench_ms, lambda: padded(q, k, v, *params))]
        mean, spread_ms, rounds = bu.run_rounds(args.rounds, measurements, errors)
        ours()
        torch.cuda.synchronize()
        ref = padded(q.double(), k.double(), v.double(), *[t.double() for t in params])
        flops = 2.0 * tokens * h * kv * (d + dv)
        nbytes = 2 * (q.numel() + k.numel() + v.numel() + out.numel())
        row = dict(case=name + variant, batch=batch,
                   lq=f"{mean_len // 2}..{3 * mean_len // 2} (T {tokens})",
                   heads=h, d=d, dv=dv, kv=kv, activation=act, errors=errors,
                   spread_ms=spread_ms, rounds=rounds, **mean)
        row["ours_rel_err"] = ((out.double() - ref).norm() / ref.norm()).item()
        add_rates(row, mean, flops, nbytes)
        rows.append(row)
        bu.write_json(args.out, args, rows, "do_bench median, L2 flushed; mean of rounds", False)
        print(json.dumps({k_: v_ for k_, v_ in row.items() if k_ != "rounds"}, default=str))


# The backward (fusion.gdpa_grad): dq, dk, dv of the same function given
# d out, against the backward torch.compile (AOTAutograd + Inductor) and
# eager autograd generate for act(scale q k^T) v; only the backward is
# timed (autograd.grad over one retained forward graph).
GRAD_CASES = [("gdpa_grad_kunlun_h2", 768, 512), ("gdpa_grad_kunlun_h4", 768, 1024),
              # Keys past 128 (two passes of 128 keys): Kunlun's shapes at
              # L_kv 256, and 150 with D 128, Dv 64.
              ("gdpa_grad_kv256_h2", 768, 512), ("gdpa_grad_kv150_silu", 768, 512),
              # Heads of 256 (column passes; keys 64 per pass).
              ("gdpa_grad_d256", 384, 512)]


def bench_grad(args, programs, rows):
    cases = [(name, variant, batch, lq) for name, batch, lq in GRAD_CASES
             for variant in [""] + args.extra_variant]
    for name, variant, batch, lq in cases:
        found = built(programs, name, variant)
        if found is None:
            continue
        prog, fn = found
        h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
        act, scale = prog["activation"], prog["scale"]
        gen = torch.Generator(device="cuda").manual_seed(0)
        spread = (d * scale ** 2) ** -0.25
        do = torch.randn(batch, lq, h, dv, generator=gen, device="cuda").bfloat16()
        q = (spread * torch.randn(batch, lq, h, d, generator=gen, device="cuda")).bfloat16()
        k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).bfloat16()
        v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").bfloat16()
        grads = [torch.empty_like(t) for t in (q, k, v)]

        def attention(q, k, v):
            s_ = torch.einsum("bihd,bjhd->bhij", q, k) * scale
            return torch.einsum("bhij,bjhe->bihe", activation(act, s_), v)

        leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
        compiled = bu.compile_fresh(attention)
        out_compiled = compiled(*leaves)
        out_eager = attention(*leaves)
        errors = {}
        ours = lambda: fn(do, q, k, v, *grads)  # noqa: E731
        measurements = [
            ("ours_call_ms", bu.bench_ms, ours),
            ("ours_kernel_ms", bu.kernel_ms, ours),
            ("torch_compile_ms", bu.bench_ms,
             lambda: torch.autograd.grad(out_compiled, leaves, do, retain_graph=True)),
            ("eager_ms", bu.bench_ms,
             lambda: torch.autograd.grad(out_eager, leaves, do, retain_graph=True))]
        mean, spread_ms, rounds = bu.run_rounds(args.rounds, measurements, errors)
        ours()
        torch.cuda.synchronize()
        leaves64 = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
        refs = torch.autograd.grad(attention(*leaves64), leaves64, do.double())
        flops = 2.0 * batch * h * lq * kv * (3 * d + 2 * dv)
        nbytes = 2 * (do.numel() + 2 * (q.numel() + k.numel() + v.numel()))
        row = dict(case=name + variant, batch=batch, lq=lq, heads=h, d=d, dv=dv, kv=kv,
                   activation=act, errors=errors, spread_ms=spread_ms, rounds=rounds, **mean)
        for label, got, ref in zip(("dq", "dk", "dv"), grads, refs):
            row[f"ours_rel_err_{label}"] = ((got.double() - ref).norm() / ref.norm()).item()
        add_rates(row, mean, flops, nbytes)
        rows.append(row)
        bu.write_json(args.out, args, rows, "do_bench median, L2 flushed; mean of rounds", False)
        print(json.dumps({k_: v_ for k_, v_ in row.items() if k_ != "rounds"}, default=str))


# The Kunlun block's backward (kunlun_backward_*: rms_norm_grad, gdpa_grad,
# add, layer_norm_grad, add from what the forward saved) against the
# backward torch.compile (AOTAutograd + Inductor) and eager autograd
# generate for the same PyTorch block (autograd.grad over one retained
# forward graph), and the training step (kunlun_train_*: forward and
# backward in one call) against torch.compile's forward + backward.
# (backward program, training-step program, B, L_q)
BLOCK_GRAD_CASES = [("kunlun_backward_h2", "kunlun_train_h2", 768, 512),
                    ("kunlun_backward_h4", "kunlun_train_h4", 768, 1024)]


def bench_block_grad(args, programs, rows):
    cases = [(bwd, train, variant, batch, lq) for bwd, train, batch, lq in BLOCK_GRAD_CASES
             for variant in [""] + args.extra_variant]
    for bwd_name, train_name, variant, batch, lq in cases:
        found = built(programs, bwd_name, variant)
        if found is None:
            continue
        prog, fn = found
        train = built(programs, train_name, variant, say=False)
        train_fn = train[1] if train else None
        h, d, kv, eps = prog["heads"], prog["d"], prog["kv"], prog["eps"]
        hd = h * d
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(batch, lq, h, d, generator=gen, device="cuda").bfloat16()
        k = (d ** -0.5 * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).bfloat16()
        v = torch.randn(batch, kv, h, d, generator=gen, device="cuda").bfloat16()
        lnw = (1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16()
        lnb = (0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16()
        rmsw = (1 + 0.1 * torch.randn(hd, generator=gen, device="cuda")).bfloat16()
        dout = torch.randn(batch, lq, h, d, generator=gen, device="cuda").bfloat16()

        def attention(q, k, v):
            s_ = torch.einsum("bihd,bjhd->bhij", q, k)
            return torch.einsum("bhij,bjhe->bihe", activation("gelu_tanh", s_), v)

        def module(q, k, v, lnw, lnb, rmsw):
            b_, l_ = q.shape[0], q.shape[1]
            ln = torch.nn.functional.layer_norm(q.reshape(b_, l_, hd), (hd,), lnw, lnb, eps)
            ln = ln.reshape(q.shape)
            y = torch.nn.functional.rms_norm((attention(ln, k, v) + ln).reshape(b_, l_, hd),
                                             (hd,), rmsw, eps)
            return y.reshape(q.shape) + q

        inputs = (q, k, v, lnw, lnb, rmsw)
        saved = ap.block_saved(q, k, v, lnw, lnb, eps, attention)
        grads = [torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)] + \
            [torch.empty(hd, device="cuda") for _ in range(3)]
        out = torch.empty_like(q)
        leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
        compiled = bu.compile_fresh(module)
        out_compiled = compiled(*leaves)
        out_eager = module(*leaves)
        errors = {}
        ours = lambda: fn(dout, q, k, v, lnw, rmsw, *saved, *grads)  # noqa: E731
        measurements = [
            ("ours_call_ms", bu.bench_ms, ours),
            ("ours_kernel_ms", bu.kernel_ms, ours),
            ("torch_compile_ms", bu.bench_ms,
             lambda: torch.autograd.grad(out_compiled, leaves, dout, retain_graph=True)),
            ("eager_ms", bu.bench_ms,
             lambda: torch.autograd.grad(out_eager, leaves, dout, retain_graph=True)),
            ("torch_compile_train_ms", bu.bench_ms,
             lambda: torch.autograd.grad(compiled(*leaves), leaves, dout))]
        if train_fn is not None:
            measurements.append(("ours_train_ms", bu.bench_ms,
                                 lambda: train_fn(*inputs, dout, out, *grads)))
        mean, spread_ms, rounds = bu.run_rounds(args.rounds, measurements, errors)
        ours()
        torch.cuda.synchronize()
        ours_grads = [g.clone() for g in grads]
        leaves64 = [t.detach().double().requires_grad_(True) for t in inputs]
        refs = torch.autograd.grad(module(*leaves64), leaves64, dout.double())
        labels = ("dq", "dk", "dv", "dlnw", "dlnb", "drmsw")
        row = dict(case=bwd_name + variant, batch=batch, lq=lq, heads=h, d=d, dv=d, kv=kv,
                   activation="gelu_tanh", errors=errors, spread_ms=spread_ms, rounds=rounds,
                   **mean)
        for label, got, ref in zip(labels, ours_grads, refs):
            row[f"ours_rel_err_{label}"] = ((got.double() - ref).norm() / ref.norm()).item()
        if train_fn is not None:
            train_fn(*inputs, dout, out, *grads)
            torch.cuda.synchronize()
            for label, got, ref in zip(labels, grads, refs):
                row[f"train_rel_err_{label}"] = ((got.double() - ref).norm() / ref.norm()).item()
        del refs, leaves64
        # The backward's bytes, about: dout, q, ln_q, h, k, v read, dq, dk,
        # dv written, the intermediates (dh, dq1, d ln_q, the LayerNorm
        # gradient) written and read.
        flops = 2.0 * batch * h * lq * kv * 5 * d
        nbytes = 2 * (10 * q.numel() + 4 * k.numel())
        add_rates(row, mean, flops, nbytes)
        if "ours_train_ms" in mean and "torch_compile_train_ms" in mean:
            row["train_speedup_vs_compile"] = mean["torch_compile_train_ms"] / mean["ours_train_ms"]
        rows.append(row)
        bu.write_json(args.out, args, rows, "do_bench median, L2 flushed; mean of rounds", False)
        print(json.dumps({k_: v_ for k_, v_ in row.items() if k_ != "rounds"}, default=str))


if __name__ == "__main__":
    main()
