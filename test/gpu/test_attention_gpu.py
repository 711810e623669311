"""fusion.gdpa on the H200 (issue 17), alone and in the Kunlun attention
block as users write it (LayerNorm(q) -> gdpa -> + ln_q -> RMSNorm -> + q,
with the norms' weights; unfused, four kernels: fusion-plan-kernels folds
+ ln_q into the gdpa's residual), dense and jagged: the attention programs of
bench/attention/gen_attention.py, compiled by fusion-compile into
$FUSION_GPU_ARTIFACTS/attention/ (bench/build_gpu_artifacts.sh), called
through the Python loader on fresh random inputs with the output poisoned
(NaN), against PyTorch in float64: relative error at most 2x PyTorch's own
bf16 (f16) error + 1e-3. Dense q [B, L_q, H, D]; L_q not a multiple of the
kernel's 128-token tile (1, 7, 300), batches of 1 to 768, every
activation, key lengths not a multiple of 64 (1, 72, 100), D != Dv; and
one library called for several shapes in a row. Jagged q [T, H, D] by
offsets (gdpa and the block): empty sequences, windows shared by several
sequences, tokens past offsets[B], i32 and i64 offsets. gdpa with a
residual added to its output (gdpa_*residual*: the query itself, read from
the stage's Q tile on sm_90a where Dv <= 128, or an operand of its own,
read from global memory at the output's rows), dense (odd L_q) and jagged,
D 64, 128 and 256: against float64 gdpa + the residual, whose bf16
reference is PyTorch's bf16 gdpa + the residual in bf16; the tokens past
offsets[B] get the residual exactly.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_attention_gpu.py
"""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the attention libraries run only on the H200",
                allow_module_level=True)

import attention_programs as ap  # noqa: E402

PROGRAMS = ap.programs()
if PROGRAMS is None:
    pytest.skip(f"{ap.MANIFEST} not built (bench/build_gpu_artifacts.sh)", allow_module_level=True)
FLOOR = 1e-3
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def function(name, variant=""):
    """The compiled function; variant "_unfused": a block's library without
    fusion.norm_attention (its four kernels)."""
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ap.MANIFEST}")
    path = ap.library_path(name, variant)
    if not os.path.exists(path):
        pytest.skip(f"{path} not built (the compiler refused it)")
    return ap.function(PROGRAMS[name], variant)


def activation(name, x):
    if name == "identity":
        return x
    if name == "relu":
        return torch.relu(x)
    if name == "gelu":
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    if name == "gelu_tanh":
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "silu":
        return x * torch.sigmoid(x)
    raise ValueError(name)


def gdpa(q, k, v, act, scale):
    """act(scale q k^T) v per batch and head, in q's dtype."""
    s = torch.einsum("bihd,bjhd->bhij", q, k) * scale
    return torch.einsum("bhij,bjhe->bihe", activation(act, s), v)


def make_case(prog, batch, lq, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = DTYPES[prog["dtype"]]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    # Scores of order 1 after the scale, as attention sees them.
    spread = (d * prog["scale"] ** 2) ** -0.25
    q = (spread * torch.randn(batch, lq, h, d, generator=gen, device="cuda")).to(dt)
    k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).to(dt)
    v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").to(dt)
    return q, k, v


def run_case(name, batch, lq, seed=1):
    prog = PROGRAMS.get(name)
    fn = function(name)
    q, k, v = make_case(prog, batch, lq, seed * 7919 + batch * 31 + lq)
    out = torch.full((batch, lq, prog["heads"], prog["dv"]), float("nan"),
                     dtype=q.dtype, device="cuda")
    fn(q, k, v, out)
    torch.cuda.synchronize()
    ref64 = gdpa(q.double(), k.double(), v.double(), prog["activation"], prog["scale"])
    ref16 = gdpa(q, k, v, prog["activation"], prog["scale"])
    return out, ref64, ref16


def rel_error(got, ref):
    got, ref = got.double(), ref.double()
    return ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()


CASES = [
    ("gdpa_kunlun_h2", 768, 512), ("gdpa_kunlun_h2", 3, 300), ("gdpa_kunlun_h2", 2, 1),
    ("gdpa_kunlun_h2", 5, 7), ("gdpa_kunlun_h4", 64, 1024), ("gdpa_kunlun_h4", 1, 129),
    ("gdpa_silu_d64", 16, 512), ("gdpa_silu_d64", 3, 77), ("gdpa_relu_kv256", 8, 384),
    ("gdpa_relu_kv256", 2, 65), ("gdpa_gelu_kv1", 4, 256), ("gdpa_gelu_kv1", 3, 5),
    ("gdpa_identity_dv256", 8, 256), ("gdpa_identity_dv256", 1, 1000),
    ("gdpa_gelu_tanh_f16", 8, 512), ("gdpa_gelu_tanh_f16", 2, 3),
    ("gdpa_gelu_tanh_kv150", 64, 512), ("gdpa_gelu_tanh_kv150", 3, 77),
]


@pytest.mark.parametrize("name,batch,lq", CASES)
def test_gdpa(name, batch, lq):
    out, ref64, ref16 = run_case(name, batch, lq)
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} NaN left (outputs not written)"
    ours, theirs = rel_error(out, ref64), rel_error(ref16, ref64)
    print(f"{name} B={batch} Lq={lq}: rel err {ours:.2e} (torch {PROGRAMS[name]['dtype']} {theirs:.2e})")
    assert ours <= 2 * theirs + FLOOR, f"rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"


def jagged_reference(q, k, v, offsets, act, scale):
    """Per sequence b, gdpa of its tokens offsets[b] .. offsets[b + 1]; the
    tokens past offsets[B] zero."""
    out = torch.zeros(q.shape[0], q.shape[1], v.shape[3], dtype=q.dtype, device=q.device)
    bounds = offsets.tolist()
    for b in range(len(bounds) - 1):
        lo, hi = bounds[b], bounds[b + 1]
        if hi > lo:
            out[lo:hi] = gdpa(q[lo:hi][None], k[b:b + 1], v[b:b + 1], act, scale)[0]
    return out


# (program, sequence lengths, extra tokens past offsets[B]): empty sequences,
# lengths not a multiple of the 128-token window, windows shared by several
# sequences (short ones), one long sequence, tokens past the last offset,
# no sequences at all.
JAGGED_CASES = [
    ("gdpa_jagged_kunlun", [300, 0, 128, 1, 77, 512, 5], 0),
    ("gdpa_jagged_kunlun", [3, 9, 1, 40, 2, 100, 30, 17, 0, 64], 45),
    ("gdpa_jagged_kunlun", [1000], 7),
    ("gdpa_jagged_kunlun", [0, 0], 130),
    ("gdpa_jagged_kunlun", [], 20),
    ("gdpa_jagged_silu_i64", [129, 0, 255, 64, 65, 7], 3),
]


@pytest.mark.parametrize("name,lengths,extra", JAGGED_CASES)
def test_gdpa_jagged(name, lengths, extra):
    prog = PROGRAMS.get(name)
    fn = function(name)
    dt = DTYPES[prog["dtype"]]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    gen = torch.Generator(device="cuda").manual_seed(sum(lengths) * 13 + extra)
    offsets, bounds = ap.jagged_offsets(prog, lengths)
    batch, tokens = len(lengths), bounds[-1] + extra
    spread = (d * prog["scale"] ** 2) ** -0.25
    q = (spread * torch.randn(tokens, h, d, generator=gen, device="cuda")).to(dt)
    k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).to(dt)
    v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").to(dt)
    out = torch.full((tokens, h, dv), float("nan"), dtype=dt, device="cuda")
    fn(q, k, v, offsets, out)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} NaN left (outputs not written)"
    past = int(offsets[-1])
    assert bool((out[past:] == 0).all()), "tokens past offsets[B] are not zero"
    if past == 0:
        return
    ref64 = jagged_reference(q.double(), k.double(), v.double(), offsets, prog["activation"],
                             prog["scale"])
    ref16 = jagged_reference(q, k, v, offsets, prog["activation"], prog["scale"])
    ours, theirs = rel_error(out[:past], ref64[:past]), rel_error(ref16[:past], ref64[:past])
    print(f"{name} lengths={lengths} +{extra}: rel err {ours:.2e} (torch {theirs:.2e})")
    assert ours <= 2 * theirs + FLOOR, f"rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"


# (program, batch, L_q): L_q not a multiple of the 128-token tile (300, 129,
# 77, 65, 7, 1) and Kunlun's shapes; the residual the query itself or an
# operand of its own; D = Dv = 128, 64 and 256 (Dv > 128: read from global
# memory in 64-column blocks), D = 64 with Dv = 128 and 256; no work items.
RESIDUAL_CASES = [
    ("gdpa_residual_q_kunlun", 768, 512), ("gdpa_residual_q_kunlun", 3, 300),
    ("gdpa_residual_q_kunlun", 2, 1), ("gdpa_residual_q_kunlun", 5, 7),
    ("gdpa_residual_kunlun", 64, 512), ("gdpa_residual_kunlun", 3, 300),
    ("gdpa_residual_kunlun", 1, 129),
    ("gdpa_residual_q_d64", 3, 300), ("gdpa_residual_q_d64", 8, 129),
    ("gdpa_residual_d64", 3, 300), ("gdpa_residual_d64", 16, 77),
    ("gdpa_residual_dv256", 3, 300), ("gdpa_residual_dv256", 1, 1000),
    ("gdpa_residual_q_d256", 2, 300), ("gdpa_residual_q_d256", 4, 65),
    ("gdpa_residual_kunlun", 0, 512), ("gdpa_residual_q_kunlun", 2, 0),
]


def residual_for(prog, q, shape, gen):
    """q itself, or a fresh residual of the output's shape and dtype (and
    the extra argument it is passed as)."""
    if prog["residual"] == "q":
        return q, ()
    r = torch.randn(shape, generator=gen, device="cuda").to(q.dtype)
    return r, (r,)


@pytest.mark.parametrize("name,batch,lq", RESIDUAL_CASES)
def test_gdpa_residual(name, batch, lq):
    """out = gdpa + the residual, rounded once."""
    prog = PROGRAMS.get(name)
    fn = function(name)
    q, k, v = make_case(prog, batch, lq, 4241 + batch * 31 + lq)
    shape = (batch, lq, prog["heads"], prog["dv"])
    gen = torch.Generator(device="cuda").manual_seed(97 + lq)
    r, extra = residual_for(prog, q, shape, gen)
    out = torch.full(shape, float("nan"), dtype=q.dtype, device="cuda")
    fn(q, k, v, *extra, out)
    torch.cuda.synchronize()
    if out.numel() == 0:
        return
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} NaN left (outputs not written)"
    ref64 = gdpa(q.double(), k.double(), v.double(), prog["activation"], prog["scale"]) + r.double()
    ref16 = gdpa(q, k, v, prog["activation"], prog["scale"]) + r
    ours, theirs = rel_error(out, ref64), rel_error(ref16, ref64)
    print(f"{name} B={batch} Lq={lq}: rel err {ours:.2e} (torch {prog['dtype']} {theirs:.2e})")
    assert ours <= 2 * theirs + FLOOR, f"rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"


# (program, sequence lengths, tokens past offsets[B]): empty sequences,
# lengths not a multiple of the 128-token window, windows shared by several
# sequences, tokens past offsets[B] (whole windows of them: out = the
# residual there), no sequences at all; i32 and i64 offsets; the query
# itself or an operand of its own; Dv 64, 128 and 256.
JAGGED_RESIDUAL_CASES = [
    ("gdpa_jagged_residual_q_kunlun", [300, 0, 128, 1, 77, 512, 5], 9),
    ("gdpa_jagged_residual_q_kunlun", [3, 9, 1, 40, 2, 100, 30, 17, 0, 64], 45),
    ("gdpa_jagged_residual_q_kunlun", [0, 0], 130),
    ("gdpa_jagged_residual_q_kunlun", [], 20),
    ("gdpa_jagged_residual_d64", [129, 0, 255, 64, 65, 7], 3),
    ("gdpa_jagged_residual_d64", [1000], 0),
    ("gdpa_jagged_residual_dv256", [3, 9, 1, 40, 2, 100], 45),
    ("gdpa_jagged_residual_dv256", [300, 0, 128], 131),
]


@pytest.mark.parametrize("name,lengths,extra", JAGGED_RESIDUAL_CASES)
def test_gdpa_jagged_residual(name, lengths, extra):
    prog = PROGRAMS.get(name)
    fn = function(name)
    dt = DTYPES[prog["dtype"]]
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    gen = torch.Generator(device="cuda").manual_seed(3000 + sum(lengths) * 13 + extra)
    offsets, bounds = ap.jagged_offsets(prog, lengths)
    batch, tokens = len(lengths), bounds[-1] + extra
    spread = (d * prog["scale"] ** 2) ** -0.25
    q = (spread * torch.randn(tokens, h, d, generator=gen, device="cuda")).to(dt)
    k = (spread * torch.randn(batch, kv, h, d, generator=gen, device="cuda")).to(dt)
    v = torch.randn(batch, kv, h, dv, generator=gen, device="cuda").to(dt)
    r, more = residual_for(prog, q, (tokens, h, dv), gen)
    out = torch.full((tokens, h, dv), float("nan"), dtype=dt, device="cuda")
    fn(q, k, v, offsets, *more, out)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} NaN left (outputs not written)"
    past = bounds[-1]
    assert torch.equal(out[past:], r[past:]), "tokens past offsets[B] are not the residual"
    if past == 0:
        return
    ref64 = jagged_reference(q.double(), k.double(), v.double(), offsets, prog["activation"],
                             prog["scale"]) + r.double()
    ref16 = jagged_reference(q, k, v, offsets, prog["activation"], prog["scale"]) + r
    ours, theirs = rel_error(out[:past], ref64[:past]), rel_error(ref16[:past], ref64[:past])
    print(f"{name} lengths={lengths} +{extra}: rel err {ours:.2e} (torch {theirs:.2e})")
    assert ours <= 2 * theirs + FLOOR, f"rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"


def block(q, k, v, lnw, lnb, rmsw, eps):
    """The Kunlun block in q's dtype, both norms over H x D."""
    import torch.nn.functional as F
    b, lq, h, d = q.shape
    ln = F.layer_norm(q.reshape(b, lq, h * d), (h * d,), lnw, lnb, eps).reshape(b, lq, h, d)
    a = gdpa(ln, k, v, "gelu_tanh", 1.0)
    y = F.rms_norm((a + ln).reshape(b, lq, h * d), (h * d,), rmsw, eps).reshape(b, lq, h, d)
    return y + q


def make_block_case(prog, batch, lq, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    h, d, kv = prog["heads"], prog["d"], prog["kv"]

    def randn(*shape, scale=1.0, shift=0.0):
        return (shift + scale * torch.randn(*shape, generator=gen, device="cuda")).bfloat16()
    q = randn(batch, lq, h, d)
    k = randn(batch, kv, h, d, scale=d ** -0.5)
    v = randn(batch, kv, h, d)
    return q, k, v, randn(h * d, scale=0.1, shift=1.0), randn(h * d, scale=0.1), \
        randn(h * d, scale=0.1, shift=1.0)


@pytest.mark.parametrize("variant", ["", "_unfused"])
@pytest.mark.parametrize("name,batch,lq", [
    ("block_kunlun_h2", 768, 512), ("block_kunlun_h2", 3, 300), ("block_kunlun_h2", 1, 1),
    ("block_kunlun_h4", 64, 1024), ("block_kunlun_h4", 2, 7),
    ("block_d64_h3_kv40", 6, 77), ("block_d64_h3_kv40", 5, 300),
    ("block_one_head", 4, 300), ("block_one_head", 1, 7)])
def test_block(name, batch, lq, variant):
    """The block fused (one FlashNormAttention kernel, a cluster of the
    heads) and unfused (four kernels: the gdpa adds ln_q as its residual,
    read from the stage's Q tile)."""
    prog = PROGRAMS.get(name)
    fn = function(name, variant)
    inputs = make_block_case(prog, batch, lq, 1000 + batch * 31 + lq)
    out = torch.full_like(inputs[0], float("nan"))
    fn(*inputs, out)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} NaN left"
    ref64 = block(*(t.double() for t in inputs), prog["eps"])
    ref16 = block(*inputs, prog["eps"])
    ours, theirs = rel_error(out, ref64), rel_error(ref16, ref64)
    print(f"{name}{variant} B={batch} Lq={lq}: rel err {ours:.2e} (torch bf16 {theirs:.2e})")
    assert ours <= 2 * theirs + FLOOR, f"rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"


def jagged_block_case(prog, lengths, extra, seed):
    """A jagged block case's offsets and their bounds
    (attention_programs.jagged_offsets), and randn(*shape, scale, shift): bf16 normal values
    from a generator seeded by `seed`, the lengths and `extra` (the tokens
    past offsets[B])."""
    offsets, bounds = ap.jagged_offsets(prog, lengths)
    gen = torch.Generator(device="cuda").manual_seed(seed + sum(lengths) * 13 + extra)

    def randn(*shape, scale=1.0, shift=0.0):
        return (shift + scale * torch.randn(*shape, generator=gen, device="cuda")).bfloat16()
    return offsets, bounds, randn


def jagged_block(q, k, v, offsets, lnw, lnb, rmsw, eps):
    """The jagged block in q's dtype: both norms over the H x D of every
    token; the attention term per sequence, zero for the tokens past
    offsets[B] (there out = rms_norm(ln_q) + q)."""
    import torch.nn.functional as F
    t, h, d = q.shape
    ln = F.layer_norm(q.reshape(t, h * d), (h * d,), lnw, lnb, eps).reshape(t, h, d)
    a = jagged_reference(ln, k, v, offsets, "gelu_tanh", 1.0)
    y = F.rms_norm((a + ln).reshape(t, h * d), (h * d,), rmsw, eps).reshape(t, h, d)
    return y + q


# (program, sequence lengths, extra tokens past offsets[B]): empty
# sequences, lengths not a multiple of 64 or 128, a window shared by many
# short sequences (130 of one token: one window, 128 items), one long
# sequence, tokens past the last offset (whole windows of them), no
# sequences at all (B = 0: no keys, every token past offsets[B]), i32 and
# i64 offsets, D = 64 with L_kv = 40, Kunlun's B = 768.
JAGGED_BLOCK_CASES = [
    ("block_jagged_kunlun_h2", [300, 0, 128, 1, 77, 512, 5], 0),
    ("block_jagged_kunlun_h2", [3, 9, 1, 40, 2, 100, 30, 17, 0, 64], 45),
    ("block_jagged_kunlun_h2", [1000], 7),
    ("block_jagged_kunlun_h2", [0, 0], 130),
    ("block_jagged_kunlun_h2", [], 20),
    ("block_jagged_kunlun_h2", [(i * 37) % 512 + 1 for i in range(768)], 0),
    ("block_jagged_kunlun_h4_i64", [129, 0, 255, 64, 65, 7], 3),
    ("block_jagged_kunlun_h4_i64", [1] * 130, 200),
    ("block_jagged_d64_kv40", [200, 33, 0, 57, 1], 11),
    ("block_jagged_d64_kv40", [(i * 53) % 300 + 1 for i in range(97)], 5),
]


@pytest.mark.parametrize("variant", ["", "_unfused"])
@pytest.mark.parametrize("name,lengths,extra", JAGGED_BLOCK_CASES,
                         ids=lambda x: f"B{len(x)}" if isinstance(x, list) else None)
def test_block_jagged(name, lengths, extra, variant):
    """The jagged block fused (one FlashNormAttention kernel over 128-token
    windows, an item per sequence a window overlaps and one for the tokens
    past offsets[B]) and unfused (its four kernels; the gdpa's residual
    ln_q is the output of the tokens past offsets[B]), output poisoned."""
    prog = PROGRAMS.get(name)
    fn = function(name, variant)
    h, d, kv = prog["heads"], prog["d"], prog["kv"]
    offsets, bounds, randn = jagged_block_case(prog, lengths, extra, 2000)
    batch, tokens = len(lengths), bounds[-1] + extra
    q = randn(tokens, h, d)
    k = randn(batch, kv, h, d, scale=d ** -0.5)
    v = randn(batch, kv, h, d)
    params = [randn(h * d, scale=0.1, shift=1.0), randn(h * d, scale=0.1),
              randn(h * d, scale=0.1, shift=1.0)]
    out = torch.full_like(q, float("nan"))
    fn(q, k, v, offsets, *params, out)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} NaN left (rows not written)"
    if tokens == 0:
        return
    ref64 = jagged_block(q.double(), k.double(), v.double(), offsets,
                         *(p.double() for p in params), prog["eps"])
    ref16 = jagged_block(q, k, v, offsets, *params, prog["eps"])
    ours, theirs = rel_error(out, ref64), rel_error(ref16, ref64)
    past = bounds[-1]
    tail = rel_error(out[past:], ref64[past:]) if extra else 0.0
    print(f"{name}{variant} B={batch} T={tokens}: rel err {ours:.2e} (torch bf16 {theirs:.2e}), "
          f"past offsets[B] {tail:.2e}")
    assert ours <= 2 * theirs + FLOOR, f"rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"
    if extra:
        their_tail = rel_error(ref16[past:], ref64[past:])
        assert tail <= 2 * their_tail + FLOOR, \
            f"past offsets[B]: rel err {tail:.3e} > 2 x {their_tail:.3e} + {FLOOR}"


def test_block_jagged_matches_dense():
    """One sequence of L_q tokens per batch, jagged, is the dense block's
    output bit for bit (the same kernel items, the same rounding)."""
    dense, jagged = PROGRAMS.get("block_kunlun_h2"), PROGRAMS.get("block_jagged_kunlun_h2")
    fd, fj = function("block_kunlun_h2"), function("block_jagged_kunlun_h2")
    batch, lq = 4, 256
    q, k, v, *params = make_block_case(dense, batch, lq, 77)
    out = torch.full_like(q, float("nan"))
    fd(q, k, v, *params, out)
    offsets = torch.arange(0, (batch + 1) * lq, lq, dtype=torch.int32, device="cuda")
    qj = q.reshape(batch * lq, 2, 128).contiguous()
    outj = torch.full_like(qj, float("nan"))
    fj(qj, k, v, offsets, *params, outj)
    torch.cuda.synchronize()
    assert jagged["heads"] == dense["heads"]
    assert torch.equal(out.reshape(batch * lq, 2, 128), outj)


def test_empty_batch_and_query():
    """B = 0 or L_q = 0: nothing to compute, no error."""
    fn = function("gdpa_kunlun_h2")
    for batch, lq in ((0, 512), (2, 0)):
        q = torch.zeros(batch, lq, 2, 128, dtype=torch.bfloat16, device="cuda")
        kv = torch.zeros(batch, 128, 2, 128, dtype=torch.bfloat16, device="cuda")
        out = torch.empty(batch, lq, 2, 128, dtype=torch.bfloat16, device="cuda")
        fn(q, kv, kv, out)
    torch.cuda.synchronize()


def test_deterministic():
    """The same inputs give bitwise the same output (no atomics)."""
    a, _, _ = run_case("gdpa_kunlun_h2", 32, 512, seed=5)
    b, _, _ = run_case("gdpa_kunlun_h2", 32, 512, seed=5)
    assert torch.equal(a, b)
