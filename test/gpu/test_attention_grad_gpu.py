"""fusion.gdpa_grad (the attention backward) on the H200: the gdpa_grad_*
programs of bench/attention/gen_attention.py, compiled by fusion-compile
into $FUSION_GPU_ARTIFACTS/attention/ (bench/build_gpu_artifacts.sh), called
through the Python loader on fresh random inputs with dq, dk and dv
poisoned (NaN), against float64 autograd of the same PyTorch code
(act(scale q k^T) v): each gradient's relative error at most 2x PyTorch's
own bf16 (f16) autograd error + 1e-3. L_q not a multiple of the kernel's
64-token tile (1, 3, 7, 65, 77, 129, 300, 1000), batches of 1 to 768, every
activation, key lengths 1, 64, 72, 100, 128 and, in passes of 128 keys (64
for heads past 128 columns), 129, 150, 160, 192, 200, 256, D and Dv of 64 and 128 (D != Dv), and past
128 (192, 256: column passes, with 64 beside 256 both ways); L_q = 0 (dk = dv = 0) and B = 0; bitwise determinism. Jagged
q (gdpa_grad_jagged_*: q, do, dq [T, H, D] by offsets, i32 and i64) against
autograd sequence by sequence: lengths not a multiple of the tile, empty
sequences, tokens past offsets[B] (dq zero), no sequences. With a residual
added to dq (gdpa_grad_*residual*: do itself, read from the stage's dO tile
on sm_90a, or an operand of its own, copied from global memory), dense and
jagged, D 128 and 64: dq against float64 autograd's dq + the residual,
whose bf16 reference is PyTorch's bf16 dq + the residual in bf16; the
tokens past offsets[B] get the residual exactly.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_attention_grad_gpu.py
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import attention_programs as ap  # noqa: E402
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
    # Keys past 128: two passes of 128 keys (dQ's partial sums through
    # global memory), the second pass's keys partly (129, 150, 200) or wholly
    # (a group with no key) past L_kv.
    ("gdpa_grad_kv256_h2", 768, 512), ("gdpa_grad_kv256_h2", 3, 300),
    ("gdpa_grad_kv256_h2", 1, 1),
    ("gdpa_grad_kv150_silu", 16, 512), ("gdpa_grad_kv150_silu", 3, 77),
    ("gdpa_grad_kv200_d64_f16", 8, 256), ("gdpa_grad_kv200_d64_f16", 2, 65),
    ("gdpa_grad_kv129_d64", 4, 1000), ("gdpa_grad_kv129_d64", 1, 7),
    # Heads past 128 columns: passes of 64 keys, each walking the tiles once
    # per 128 columns of dK and dV (D or Dv 192, 256; the other 64 too).
    ("gdpa_grad_d256", 64, 512), ("gdpa_grad_d256", 3, 300),
    ("gdpa_grad_d256", 1, 1),
    ("gdpa_grad_d192_kv100", 16, 384), ("gdpa_grad_d192_kv100", 2, 77),
    ("gdpa_grad_d64_dv256_kv200_f16", 8, 256), ("gdpa_grad_d64_dv256_kv200_f16", 3, 65),
    ("gdpa_grad_d256_dv64", 4, 129), ("gdpa_grad_d256_dv64", 1, 1000),
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


@pytest.mark.parametrize("name", ["gdpa_grad_kunlun_h2", "gdpa_grad_kv256_h2"])
def test_empty_query(name):
    """L_q = 0: dq is empty, dk = dv = 0 (every key's sum has no term; with
    two passes, no partial sums to hold)."""
    prog = PROGRAMS.get(name)
    do, q, k, v = make_case(prog, 3, 0, 7)
    k = torch.randn_like(k)
    _, dk, dv = call(name, do, q, k, v)
    assert bool((dk == 0).all()) and bool((dv == 0).all())


@pytest.mark.parametrize("name", ["gdpa_grad_kunlun_h2", "gdpa_grad_kv256_h2"])
def test_empty_batch(name):
    """B = 0: nothing to compute, no error."""
    prog = PROGRAMS.get(name)
    call(name, *make_case(prog, 0, 512, 7))


@pytest.mark.parametrize("name", ["gdpa_grad_kunlun_h2", "gdpa_grad_kv256_h2"])
def test_deterministic(name):
    """The same inputs give bitwise the same gradients (no atomics; with two
    passes of keys, dQ's partial sums in a fixed order)."""
    prog = PROGRAMS.get(name)
    inputs = make_case(prog, 32, 512, 5)
    a, b = call(name, *inputs), call(name, *inputs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def jagged_reference(prog, do, q, k, v, bounds):
    """(dq, dk, dv) of the jagged gdpa by autograd, sequence by sequence: dq
    of the tokens outside every sequence zero, dk = dv = 0 for an empty
    sequence."""
    dq = torch.zeros_like(q)
    dk, dv = torch.zeros_like(k), torch.zeros_like(v)
    for b in range(len(bounds) - 1):
        lo, hi = bounds[b], bounds[b + 1]
        if hi > lo:
            g = reference(prog, do[lo:hi][None], q[lo:hi][None], k[b:b + 1], v[b:b + 1])
            dq[lo:hi], dk[b], dv[b] = g[0][0], g[1][0], g[2][0]
    return dq, dk, dv


# (program, sequence lengths, extra tokens past offsets[B]): lengths not a
# multiple of the 64-token tile (a last tile that also loads the next
# sequence's tokens), empty sequences, short sequences sharing a tile, one
# long sequence, tokens past the last offset (dq zero), no sequences.
JAGGED_CASES = [
    ("gdpa_grad_jagged_kunlun", [300, 0, 128, 1, 77, 512, 5], 0),
    ("gdpa_grad_jagged_kunlun", [3, 9, 1, 40, 2, 100, 30, 17, 0, 64], 45),
    ("gdpa_grad_jagged_kunlun", [1000], 7),
    ("gdpa_grad_jagged_kunlun", [0, 0], 130),
    ("gdpa_grad_jagged_kunlun", [], 20),
    ("gdpa_grad_jagged_silu_i64", [129, 0, 255, 64, 65, 7], 3),
    ("gdpa_grad_jagged_kv192", [300, 0, 128, 1, 77, 512, 5], 11),
    ("gdpa_grad_jagged_kv192", [3, 9, 1, 40, 2, 100, 30, 17, 0, 64], 0),
    ("gdpa_grad_jagged_d256", [300, 0, 128, 1, 77, 512, 5], 11),
    ("gdpa_grad_jagged_d256", [], 20),
]


@pytest.mark.parametrize("name,lengths,extra", JAGGED_CASES)
def test_gdpa_grad_jagged(name, lengths, extra):
    fn = function(name)
    prog = PROGRAMS[name]
    dt = DTYPES[prog["dtype"]]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    gen = torch.Generator(device="cuda").manual_seed(sum(lengths) * 17 + extra)
    offsets, bounds = ap.jagged_offsets(prog, lengths)
    batch, tokens = len(lengths), bounds[-1] + extra
    spread = (d * prog["scale"] ** 2) ** -0.25
    do = torch.randn(tokens, h, dv, generator=gen, device="cuda").to(dt)
    q = (spread * torch.randn(tokens, h, d, generator=gen, device="cuda")).to(dt)
    k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).to(dt)
    v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").to(dt)
    ours = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    fn(do, q, k, v, offsets, *ours)
    torch.cuda.synchronize()
    ref64 = jagged_reference(prog, *(t.double() for t in (do, q, k, v)), bounds)
    ref16 = jagged_reference(prog, do, q, k, v, bounds)
    assert bool((ours[0][bounds[-1]:] == 0).all()), "dq past offsets[B] is not zero"
    for label, got, r64, r16 in zip(("dq", "dk", "dv"), ours, ref64, ref16):
        assert not torch.isnan(got).any(), \
            f"{label}: {int(torch.isnan(got).sum())} NaN left (not written)"
        if r64.numel() == 0 or not bool(r64.abs().sum() > 0):
            assert bool((got == 0).all()), f"{label}: expected zeros"
            continue
        mine, theirs = rel_error(got, r64), rel_error(r16, r64)
        print(f"{name} lengths={lengths} +{extra} {label}: rel err {mine:.2e} "
              f"(torch {prog['dtype']} {theirs:.2e})")
        assert mine <= 2 * theirs + FLOOR, \
            f"{label}: rel err {mine:.3e} > 2 x {theirs:.3e} + {FLOOR}"


# (program, batch, L_q): L_q not a multiple of the 64-token tile (300, 65,
# 7, 1) and a large batch; the residual do itself or an operand of its own,
# D = Dv = 128 and 64.
RESIDUAL_CASES = [
    ("gdpa_grad_residual_kunlun", 3, 300), ("gdpa_grad_residual_kunlun", 64, 512),
    ("gdpa_grad_residual_kunlun", 1, 1),
    ("gdpa_grad_residual_do_kunlun", 3, 300), ("gdpa_grad_residual_do_kunlun", 32, 512),
    ("gdpa_grad_residual_do_kunlun", 2, 65),
    ("gdpa_grad_residual_d64", 3, 300), ("gdpa_grad_residual_d64", 5, 7),
    ("gdpa_grad_residual_do_d64", 3, 300), ("gdpa_grad_residual_do_d64", 8, 129),
    ("gdpa_grad_residual_kv256", 3, 300), ("gdpa_grad_residual_kv256", 64, 512),
    ("gdpa_grad_residual_do_kv200", 3, 300), ("gdpa_grad_residual_do_kv200", 2, 65),
    ("gdpa_grad_residual_do_d256", 3, 300), ("gdpa_grad_residual_do_d256", 16, 512),
    ("gdpa_grad_residual_d256", 3, 300), ("gdpa_grad_residual_d256", 8, 129),
]


def residual_for(prog, do, q, gen):
    """do itself, or a fresh residual of q's shape and dtype."""
    if prog["residual"] == "do":
        return do, ()
    r = torch.randn(q.shape, generator=gen, device="cuda").to(q.dtype)
    return r, (r,)


def check_dq_with_residual(name, label, got, r64, r16):
    assert not torch.isnan(got).any(), \
        f"{label}: {int(torch.isnan(got).sum())} NaN left (not written)"
    mine, theirs = rel_error(got, r64), rel_error(r16, r64)
    print(f"{name} {label}: rel err {mine:.2e} (torch {theirs:.2e})")
    assert mine <= 2 * theirs + FLOOR, \
        f"{label}: rel err {mine:.3e} > 2 x {theirs:.3e} + {FLOOR}"


@pytest.mark.parametrize("name,batch,lq", RESIDUAL_CASES)
def test_gdpa_grad_residual(name, batch, lq):
    """dq = autograd's dq + the residual (rounded once), dk and dv as
    without it."""
    fn = function(name)
    prog = PROGRAMS[name]
    do, q, k, v = make_case(prog, batch, lq, 5113 + batch * 31 + lq)
    gen = torch.Generator(device="cuda").manual_seed(97 + lq)
    r, extra = residual_for(prog, do, q, gen)
    ours = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    fn(do, q, k, v, *extra, *ours)
    torch.cuda.synchronize()
    ref64 = list(reference(prog, *(t.double() for t in (do, q, k, v))))
    ref16 = list(reference(prog, do, q, k, v))
    ref64[0] = ref64[0] + r.double()
    ref16[0] = ref16[0] + r
    for label, got, r64, r16 in zip(("dq", "dk", "dv"), ours, ref64, ref16):
        check_dq_with_residual(f"{name} B={batch} Lq={lq}", label, got, r64, r16)


# (program, sequence lengths, tokens past offsets[B]): lengths not a multiple
# of the tile, an empty sequence, tokens outside every sequence (dq = the
# residual there).
JAGGED_RESIDUAL_CASES = [
    ("gdpa_grad_jagged_residual_kunlun", [300, 0, 128, 1, 77, 512, 5], 9),
    ("gdpa_grad_jagged_residual_kunlun", [1000], 0),
    ("gdpa_grad_jagged_residual_do_d64", [129, 0, 255, 64, 65, 7], 3),
    ("gdpa_grad_jagged_residual_do_d64", [3, 9, 1, 40, 2, 100], 45),
    ("gdpa_grad_jagged_residual_kv160_d64", [129, 0, 255, 64, 65, 7], 3),
    ("gdpa_grad_jagged_residual_kv160_d64", [1000], 20),
    ("gdpa_grad_jagged_residual_d192", [129, 0, 255, 64, 65, 7], 3),
    ("gdpa_grad_jagged_residual_d192", [1000], 0),
]


@pytest.mark.parametrize("name,lengths,extra", JAGGED_RESIDUAL_CASES)
def test_gdpa_grad_jagged_residual(name, lengths, extra):
    fn = function(name)
    prog = PROGRAMS[name]
    dt = DTYPES[prog["dtype"]]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    gen = torch.Generator(device="cuda").manual_seed(sum(lengths) * 13 + extra)
    offsets, bounds = ap.jagged_offsets(prog, lengths)
    batch, tokens = len(lengths), bounds[-1] + extra
    spread = (d * prog["scale"] ** 2) ** -0.25
    do = torch.randn(tokens, h, dv, generator=gen, device="cuda").to(dt)
    q = (spread * torch.randn(tokens, h, d, generator=gen, device="cuda")).to(dt)
    k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).to(dt)
    v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").to(dt)
    r, more = residual_for(prog, do, q, gen)
    ours = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    fn(do, q, k, v, offsets, *more, *ours)
    torch.cuda.synchronize()
    ref64 = list(jagged_reference(prog, *(t.double() for t in (do, q, k, v)), bounds))
    ref16 = list(jagged_reference(prog, do, q, k, v, bounds))
    ref64[0] = ref64[0] + r.double()
    ref16[0] = ref16[0] + r
    assert torch.equal(ours[0][bounds[-1]:], r[bounds[-1]:]), \
        "dq past offsets[B] is not the residual"
    for label, got, r64, r16 in zip(("dq", "dk", "dv"), ours, ref64, ref16):
        if r64.numel() == 0 or not bool(r64.abs().sum() > 0):
            assert bool((got == 0).all()), f"{label}: expected zeros"
            continue
        check_dq_with_residual(f"{name} lengths={lengths} +{extra}", label, got, r64, r16)
