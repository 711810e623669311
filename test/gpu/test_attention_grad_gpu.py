"""fusion.gdpa_grad (the attention backward) on the H200: the gdpa_grad_*
programs of bench/attention/gen_attention.py, compiled by fusion-compile
into $FUSION_GPU_ARTIFACTS/attention/ (bench/build_gpu_artifacts.sh), called
through the Python loader on fresh random inputs with dq, dk and dv
poisoned (NaN), against float64 autograd of the same PyTorch code
(act(scale q k^T) v): each gradient's relative error at most 2x PyTorch's
own bf16 (f16) autograd error + 1e-3. L_q not a multiple of the kernel's
64-token tile (1, 3, 7, 65, 77, 129, 300, 1000), batches of 1 to 768, every
activation, key lengths 1, 64, 72, 100, 128, D and Dv of 64 and 128
(D != Dv); L_q = 0 (dk = dv = 0) and B = 0; bitwise determinism.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_attention_grad_gpu.py
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The checks that skip the module (no torch, no CUDA GPU, no manifest) and
# the compiled functions are test_attention_gpu's.
from test_attention_gpu import (  # noqa: E402
    DTYPES, FLOOR, PROGRAMS, function, gdpa, rel_error, torch)


def make_case(prog, batch, lq, seed):
    """do, q, k, v with scores of order 1 after the scale."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = DTYPES[prog["dtype"]]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    spread = (d * prog["scale"] ** 2) ** -0.25
    do = torch.randn(batch, lq, h, dv, generator=gen, device="cuda").to(dt)
    q = (spread * torch.randn(batch, lq, h, d, generator=gen, device="cuda")).to(dt)
    k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).to(dt)
    v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").to(dt)
    return do, q, k, v


def reference(prog, do, q, k, v):
    """(dq, dk, dv) by autograd of gdpa in the inputs' dtype."""
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = gdpa(q, k, v, prog["activation"], prog["scale"])
    out.backward(do)
    return q.grad, k.grad, v.grad


def call(name, do, q, k, v):
    """Our dq, dk, dv, their buffers filled with NaN before the call."""
    fn = function(name)
    grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    fn(do, q, k, v, *grads)
    torch.cuda.synchronize()
    return grads


CASES = [
    ("gdpa_grad_kunlun_h2", 768, 512), ("gdpa_grad_kunlun_h2", 3, 300),
    ("gdpa_grad_kunlun_h2", 1, 1), ("gdpa_grad_kunlun_h2", 5, 7),
    ("gdpa_grad_kunlun_h4", 64, 1024), ("gdpa_grad_kunlun_h4", 1, 129),
    ("gdpa_grad_silu_d64", 16, 512), ("gdpa_grad_silu_d64", 3, 77),
    ("gdpa_grad_relu_kv64", 8, 384), ("gdpa_grad_relu_kv64", 2, 65),
    ("gdpa_grad_gelu_kv1", 4, 256), ("gdpa_grad_gelu_kv1", 3, 5),
    ("gdpa_grad_identity_d64", 8, 256), ("gdpa_grad_identity_d64", 1, 1000),
    ("gdpa_grad_gelu_tanh_f16", 8, 512), ("gdpa_grad_gelu_tanh_f16", 2, 3),
]


@pytest.mark.parametrize("name,batch,lq", CASES)
def test_gdpa_grad(name, batch, lq):
    prog = PROGRAMS.get(name)
    do, q, k, v = make_case(prog, batch, lq, 4243 + batch * 31 + lq)
    ours = call(name, do, q, k, v)
    ref64 = reference(prog, *(t.double() for t in (do, q, k, v)))
    ref16 = reference(prog, do, q, k, v)
    for label, got, r64, r16 in zip(("dq", "dk", "dv"), ours, ref64, ref16):
        assert not torch.isnan(got).any(), \
            f"{label}: {int(torch.isnan(got).sum())} NaN left (not written)"
        mine, theirs = rel_error(got, r64), rel_error(r16, r64)
        print(f"{name} B={batch} Lq={lq} {label}: rel err {mine:.2e} "
              f"(torch {prog['dtype']} {theirs:.2e})")
        assert mine <= 2 * theirs + FLOOR, \
            f"{label}: rel err {mine:.3e} > 2 x {theirs:.3e} + {FLOOR}"


def test_empty_query():
    """L_q = 0: dq is empty, dk = dv = 0 (every key's sum has no term)."""
    prog = PROGRAMS.get("gdpa_grad_kunlun_h2")
    do, q, k, v = make_case(prog, 3, 0, 7)
    k = torch.randn_like(k)
    _, dk, dv = call("gdpa_grad_kunlun_h2", do, q, k, v)
    assert bool((dk == 0).all()) and bool((dv == 0).all())


def test_empty_batch():
    """B = 0: nothing to compute, no error."""
    prog = PROGRAMS.get("gdpa_grad_kunlun_h2")
    call("gdpa_grad_kunlun_h2", *make_case(prog, 0, 512, 7))


def test_deterministic():
    """The same inputs give bitwise the same gradients (no atomics)."""
    prog = PROGRAMS.get("gdpa_grad_kunlun_h2")
    inputs = make_case(prog, 32, 512, 5)
    a, b = call("gdpa_grad_kunlun_h2", *inputs), call("gdpa_grad_kunlun_h2", *inputs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
