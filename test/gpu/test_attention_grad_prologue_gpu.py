"""fusion.gdpa_grad with its RMSNorm-gradient prologue on the H200: the
gdpa_grad_rms_* programs of bench/attention/gen_attention.py (do =
rms_norm_grad(d out, x, rstd, w) over the H x D of each token, then the
attention backward with that do; with grad_residual dq += do), compiled by
fusion-compile into $FUSION_GPU_ARTIFACTS/attention/
(bench/build_gpu_artifacts.sh), called through the Python loader on fresh
random inputs with every output poisoned (NaN), against float64 autograd
of the same PyTorch code (RMSNorm with its saved rstd, then act(scale q
k^T) do-weighted): each gradient's relative error at most 2x PyTorch's own
bf16 autograd error + 1e-3. H 1 (clusters of one), 2, 3 and 4, one and
two consumer groups (L_kv <= 64 and more); L_q not a
multiple of the 64-token tile; batches of 1 to 768 (fewer batches than
clusters and more); L_q = 0 (dk = dv = dw = 0) and B = 0; dw bitwise the
same run to run.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_attention_grad_prologue_gpu.py
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_attention_gpu import FLOOR, PROGRAMS, function, gdpa, rel_error, torch  # noqa: E402

EPS = 1e-5


def make_case(prog, batch, lq, seed):
    """d out, q, k, v, x, rstd (x's, as a forward saves it) and w."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    h, d, kv = prog["heads"], prog["d"], prog["kv"]
    spread = (d * prog["scale"] ** 2) ** -0.25

    def randn(*shape, scale=1.0):
        return (scale * torch.randn(*shape, generator=gen, device="cuda")).to(torch.bfloat16)

    dout = randn(batch, lq, h, d)
    q = randn(batch, lq, h, d, scale=spread)
    k = randn(batch, kv, h, d, scale=spread)
    v = randn(batch, kv, h, d)
    # x with a per-token scale of its own, so that rstd varies by token.
    x = (torch.randn(batch, lq, h, d, generator=gen, device="cuda")
         * (0.5 + torch.rand(batch, lq, 1, 1, generator=gen, device="cuda"))).to(torch.bfloat16)
    xf = x.double().reshape(batch, lq, h * d)
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + EPS).float()
    w = (1 + 0.5 * torch.randn(h * d, generator=gen, device="cuda")).to(torch.bfloat16)
    return dout, q, k, v, x, rstd, w


def reference(prog, dout, q, k, v, x, rstd, w, dtype):  # noqa: ARG001 (rstd: from x)
    """(dq, dk, dv, dw) in `dtype`: do by the RMSNorm's autograd (x with its
    given rstd), then gdpa's autograd from do."""
    b, lq, h, d = q.shape
    xr = x.to(dtype).detach().reshape(b, lq, h * d).requires_grad_(True)
    wr = (w.to(dtype) if prog["rms_weight"] else torch.ones(h * d, dtype=dtype,
                                                           device="cuda"))
    wr = wr.detach().requires_grad_(True)
    # rstd is a function of x in the forward (make_case saved it from x):
    # recomputed here so that autograd differentiates through it.
    rr = torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + EPS)
    y = xr * rr * wr
    y.backward(dout.to(dtype).reshape(b, lq, h * d))
    do = xr.grad.reshape(b, lq, h, d).to(dtype)
    qq, kk, vv = (t.to(dtype).detach().requires_grad_(True) for t in (q, k, v))
    out = gdpa(qq, kk, vv, prog["activation"], prog["scale"])
    out.backward(do)
    dq = qq.grad + do if prog["grad_residual"] else qq.grad
    grads = [dq, kk.grad, vv.grad]
    if prog["rms_weight"]:
        grads.append(wr.grad)
    return grads


def call(name, prog, dout, q, k, v, x, rstd, w):
    fn = function(name)
    outs = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    if prog["rms_weight"]:
        outs.append(torch.full((w.numel(),), float("nan"), device="cuda"))
        fn(dout, q, k, v, x, rstd, w, *outs)
    else:
        fn(dout, q, k, v, x, rstd, *outs)
    torch.cuda.synchronize()
    return outs


CASES = [
    ("gdpa_grad_rms_kunlun_h2", 768, 512), ("gdpa_grad_rms_kunlun_h2", 3, 300),
    ("gdpa_grad_rms_kunlun_h2", 1, 1), ("gdpa_grad_rms_kunlun_h2", 5, 7),
    ("gdpa_grad_rms_kunlun_h2", 200, 130),
    ("gdpa_grad_rms_kunlun_h4", 64, 1024), ("gdpa_grad_rms_kunlun_h4", 2, 129),
    ("gdpa_grad_rms_d64_h3", 16, 512), ("gdpa_grad_rms_d64_h3", 3, 77),
    ("gdpa_grad_rms_one_head", 8, 256), ("gdpa_grad_rms_one_head", 1, 1000),
    ("gdpa_grad_rms_one_head_kv100", 4, 300), ("gdpa_grad_rms_one_group_h2", 6, 200),
]


@pytest.mark.parametrize("name,batch,lq", CASES)
def test_gdpa_grad_rms_prologue(name, batch, lq):
    prog = PROGRAMS.get(name)
    inputs = make_case(prog, batch, lq, 5150 + batch * 31 + lq)
    ours = call(name, prog, *inputs)
    ref64 = reference(prog, *inputs, torch.float64)
    ref16 = reference(prog, *inputs, torch.bfloat16)
    labels = ("dq", "dk", "dv", "dw")
    for label, got, r64, r16 in zip(labels, ours, ref64, ref16):
        assert not torch.isnan(got).any(), \
            f"{label}: {int(torch.isnan(got).sum())} NaN left (not written)"
        mine, theirs = rel_error(got, r64), rel_error(r16, r64)
        print(f"{name} B={batch} Lq={lq} {label}: rel err {mine:.2e} (torch bf16 {theirs:.2e})")
        assert mine <= 2 * theirs + FLOOR, \
            f"{label}: rel err {mine:.3e} > 2 x {theirs:.3e} + {FLOOR}"


def test_empty_query():
    """L_q = 0: dk = dv = dw = 0; B = 0: no error."""
    name = "gdpa_grad_rms_kunlun_h2"
    prog = PROGRAMS.get(name)
    inputs = list(make_case(prog, 3, 0, 7))
    inputs[2] = torch.randn_like(inputs[2].float()).to(torch.bfloat16)
    _, dk, dv, dw = call(name, prog, *inputs)
    assert bool((dk == 0).all()) and bool((dv == 0).all()) and bool((dw == 0).all())
    call(name, prog, *make_case(prog, 0, 512, 7))


def test_deterministic():
    """dw (partial rows, then a fixed-order sum) and the rest bitwise the same."""
    name = "gdpa_grad_rms_kunlun_h2"
    prog = PROGRAMS.get(name)
    inputs = make_case(prog, 32, 512, 5)
    a, b = call(name, prog, *inputs), call(name, prog, *inputs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
