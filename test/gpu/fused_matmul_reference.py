"""Float64 and PyTorch-bf16 references of fusion.fused_matmul cases, and the
tensors a case takes (shared by test_fused_matmul_gpu.py and
bench/bench_fused_matmul.py). The formulas are those of FusionOps.td."""

import torch


def half_dtype(case):
    """The case's 16-bit type (bf16 unless the case says f16)."""
    return torch.float16 if case.get("dtype") == "f16" else torch.bfloat16


def make_inputs(case, gen, device="cuda"):
    """Fresh random inputs (normal) in argument order, as a dict."""
    m, k, n = case["m"], case["k"], case["n"]
    bf = half_dtype(case)

    def rnd(*shape, dtype=bf, scale=1.0):
        return (torch.randn(*shape, generator=gen, device=device) * scale).to(dtype)

    b_shape = (n, k) if case.get("transpose_rhs") else (k, n)
    a = torch.randn(m, k, generator=gen, device=device) + case.get("a_offset", 0.0)
    x = {"a": a.to(bf), "b": rnd(*b_shape, scale=k ** -0.5)}
    if case["residual"]:
        x["r"] = rnd(m, n)
    if case["row_scale"]:
        x["s"] = torch.rand(m, generator=gen, device=device) + 0.5
    if case["col_bias"]:
        x["cb"] = rnd(n)
    pn = case.get("group") or n  # per-head norms: parameters of a head's size
    if case["weight"]:
        x["w"] = rnd(pn) * 0.5 + 1.0
    if case["bias"]:
        x["nb"] = rnd(pn)
    return x


def make_outputs(case, device="cuda"):
    """Outputs poisoned with NaN, so that an unwritten element fails."""
    m, n = case["m"], case["n"]
    out_dtype = torch.float32 if case["out"] == "f32" else half_dtype(case)
    y = {"y": torch.full((m, n), float("nan"), dtype=out_dtype, device=device)}
    if case["save_stats"]:
        stat = (m, n // case["group"]) if case.get("group") else (m,)
        if case["epilogue"] == "layer_norm":
            y["mean"] = torch.full(stat, float("nan"), device=device)
        y["rstd"] = torch.full(stat, float("nan"), device=device)
    return y


def reference(case, x, dtype):
    """The case's function computed in `dtype` (float64: the reference;
    bfloat16 or float16: what PyTorch's own 16-bit path gives). Returns a dict
    of outputs."""
    a, b = x["a"].to(dtype), x["b"].to(dtype)
    if case.get("transpose_rhs"):
        b = b.t()
    if case["prologue"] == "rms_norm":
        a32 = x["a"].to(torch.float64 if dtype == torch.float64 else torch.float32)
        r = torch.rsqrt(a32.pow(2).mean(-1, keepdim=True) + case["prologue_eps"])
        a = (a32 * r).to(dtype)
    elif case["prologue"] == "layer_norm":
        a32 = x["a"].to(torch.float64 if dtype == torch.float64 else torch.float32)
        mean = a32.mean(-1, keepdim=True)
        var = (a32 - mean).pow(2).mean(-1, keepdim=True)
        a = ((a32 - mean) * torch.rsqrt(var + case["prologue_eps"])).to(dtype)
    acc = a @ b
    if case["row_scale"]:
        acc = acc * x["s"].to(dtype)[:, None]
    if case["col_bias"]:
        acc = acc + x["cb"].to(dtype)
    if case["residual"]:
        acc = acc + x["r"].to(dtype)
    out = {}
    # Per-head norms: the rows viewed as [M, N / G, G], normalized over G.
    g = case.get("group") or acc.shape[-1]
    rows = acc.shape[:-1] + (acc.shape[-1] // g, g)
    # Whole rows: statistics [M] (the one group dropped); groups: [M, N / G].
    unrow = (lambda s: s) if case.get("group") else (lambda s: s.squeeze(-1))
    if case["epilogue"] == "rms_norm":
        t = acc.to(torch.float64 if dtype == torch.float64 else torch.float32).reshape(rows)
        rstd = torch.rsqrt(t.pow(2).mean(-1) + case["eps"])
        y = t * rstd[..., None]
        if case["weight"]:
            y = y * x["w"].to(y.dtype)
        out["y"], out["rstd"] = y.flatten(-2).to(dtype), unrow(rstd)
    elif case["epilogue"] == "layer_norm":
        t = acc.to(torch.float64 if dtype == torch.float64 else torch.float32).reshape(rows)
        mean = t.mean(-1)
        rstd = torch.rsqrt((t - mean[..., None]).pow(2).mean(-1) + case["eps"])
        y = (t - mean[..., None]) * rstd[..., None]
        if case["weight"]:
            y = y * x["w"].to(y.dtype)
        if case["bias"]:
            y = y + x["nb"].to(y.dtype)
        out["y"] = y.flatten(-2).to(dtype)
        out["mean"], out["rstd"] = unrow(mean), unrow(rstd)
    else:
        out["y"] = acc
    return out


def rel_error(got, ref):
    got, ref = got.double(), ref.double()
    return ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()
