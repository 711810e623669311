"""The Kunlun attention block's backward on the H200 (issue 17): the
kunlun_train_* programs of bench/attention/gen_attention.py (the block's
training step as users write it: LayerNorm(q) -> gdpa -> + ln_q ->
RMSNorm -> + q, then the backward with the dialect's grad ops given d out;
four kernels, since no kernel takes fusion.norm_attention_grad yet: the
FlashNormAttention forward saving ln_q and h, then rms_norm_grad, gdpa_grad
with dh + dq1 added in its dQ epilogue, and layer_norm_grad with the outer
residual's add folded in), the same step with jagged q
(kunlun_train_jagged_h2, train_jagged_d64_kv40: empty sequences, tokens
past offsets[B]) and the
kunlun_backward_* programs (the backward alone, from what the forward
saves), compiled by fusion-compile into $FUSION_GPU_ARTIFACTS/attention/
(bench/build_gpu_artifacts.sh), called through the Python loader on fresh
random inputs with every output poisoned (NaN), against float64 autograd of
the same PyTorch block (test_attention_gpu.block): out, dq, dk, dv and the
norm parameters' gradients each within 2x PyTorch's own bf16 autograd error
+ 1e-3. L_q not a multiple of the kernels' tiles, batches of 1 to 768, H 2
and 4; L_q = 0 and B = 0; bitwise determinism.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_attention_block_grad_gpu.py
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The checks that skip the module (no torch, no CUDA GPU, no manifest) and
# the compiled functions are test_attention_gpu's.
import attention_programs as ap  # noqa: E402
from test_attention_gpu import (  # noqa: E402
    FLOOR, PROGRAMS, block, function, gdpa, jagged_block, jagged_block_case, make_block_case,
    rel_error, torch)

GRAD_LABELS = ("dq", "dk", "dv", "dlnw", "dlnb", "drmsw")


def make_train_case(prog, batch, lq, seed):
    """q, k, v, lnw, lnb, rmsw (test_attention_gpu's block case) and dout."""
    inputs = make_block_case(prog, batch, lq, seed)
    gen = torch.Generator(device="cuda").manual_seed(seed + 1)
    dout = torch.randn(inputs[0].shape, generator=gen, device="cuda").bfloat16()
    return inputs, dout


def reference(inputs, dout, eps):
    """out and the six gradients by autograd of the block in the inputs'
    dtype."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = block(*leaves, eps)
    grads = torch.autograd.grad(out, leaves, dout)
    return (out.detach(),) + tuple(grads)


def empty_outputs(prog, q):
    """out, dq, dk, dv (bf16) and the parameter gradients (f32), NaN."""
    b, lq, h, d = q.shape
    kv = torch.full((b, prog["kv"], h, d), float("nan"), dtype=q.dtype, device="cuda")
    params = [torch.full((h * d,), float("nan"), device="cuda") for _ in range(3)]
    return [torch.full_like(q, float("nan")), kv, kv.clone()] + params


def call_train(name, inputs, dout):
    """Our out and six gradients, every buffer NaN before the call."""
    fn = function(name)
    prog = PROGRAMS[name]
    outs = [torch.full_like(inputs[0], float("nan"))] + empty_outputs(prog, inputs[0])
    fn(*inputs, dout, *outs)
    torch.cuda.synchronize()
    return outs


def saved(prog, q, k, v, lnw, lnb, rmsw):
    return ap.block_saved(q, k, v, lnw, lnb, prog["eps"],
                          lambda ln, k_, v_: gdpa(ln, k_, v_, "gelu_tanh", 1.0))


def check(name, batch, lq, labels, got, ref64, ref16):
    for label, mine_t, r64, r16 in zip(labels, got, ref64, ref16):
        assert not torch.isnan(mine_t).any(), \
            f"{label}: {int(torch.isnan(mine_t).sum())} NaN left (not written)"
        mine, theirs = rel_error(mine_t, r64), rel_error(r16, r64)
        print(f"{name} B={batch} Lq={lq} {label}: rel err {mine:.2e} (torch bf16 {theirs:.2e})")
        assert mine <= 2 * theirs + FLOOR, \
            f"{label}: rel err {mine:.3e} > 2 x {theirs:.3e} + {FLOOR}"


TRAIN_CASES = [
    ("kunlun_train_h2", 768, 512), ("kunlun_train_h2", 3, 300), ("kunlun_train_h2", 1, 1),
    ("kunlun_train_h2", 5, 7), ("kunlun_train_h4", 64, 1024), ("kunlun_train_h4", 2, 129),
]


@pytest.mark.parametrize("name,batch,lq", TRAIN_CASES)
def test_train_step(name, batch, lq):
    """out and every gradient of the block's training step."""
    prog = PROGRAMS.get(name)
    inputs, dout = make_train_case(prog, batch, lq, 2000 + batch * 31 + lq)
    ours = call_train(name, inputs, dout)
    ref64 = reference([t.double() for t in inputs], dout.double(), prog["eps"])
    ref16 = reference(inputs, dout, prog["eps"])
    check(name, batch, lq, ("out",) + GRAD_LABELS, ours, ref64, ref16)


@pytest.mark.parametrize("name,batch,lq", [
    ("kunlun_backward_h2", 768, 512), ("kunlun_backward_h2", 3, 77),
    ("kunlun_backward_h4", 16, 1024), ("kunlun_backward_h4", 1, 5)])
def test_backward(name, batch, lq):
    """The backward alone, from the saved ln_q, h and statistics."""
    prog = PROGRAMS.get(name)
    fn = function(name)
    inputs, dout = make_train_case(prog, batch, lq, 3000 + batch * 31 + lq)
    q, k, v, lnw, lnb, rmsw = inputs
    grads = empty_outputs(prog, q)
    fn(dout, q, k, v, lnw, rmsw, *saved(prog, *inputs), *grads)
    torch.cuda.synchronize()
    ref64 = reference([t.double() for t in inputs], dout.double(), prog["eps"])[1:]
    ref16 = reference(inputs, dout, prog["eps"])[1:]
    check(name, batch, lq, GRAD_LABELS, grads, ref64, ref16)


def test_empty():
    """L_q = 0: dk, dv and the parameter gradients are 0 (sums without a
    term); B = 0: nothing to compute, no error."""
    prog = PROGRAMS.get("kunlun_train_h2")
    inputs, dout = make_train_case(prog, 3, 0, 7)
    outs = call_train("kunlun_train_h2", inputs, dout)
    for label, t in zip(("dk", "dv", "dlnw", "dlnb", "drmsw"), outs[2:]):
        assert bool((t == 0).all()), f"{label} is not 0 for L_q = 0"
    call_train("kunlun_train_h2", *make_train_case(prog, 0, 512, 7))


def test_deterministic():
    """The same inputs give bitwise the same outputs (no atomics)."""
    prog = PROGRAMS.get("kunlun_train_h2")
    inputs, dout = make_train_case(prog, 32, 512, 5)
    a = call_train("kunlun_train_h2", inputs, dout)
    b = call_train("kunlun_train_h2", inputs, dout)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


# (program, sequence lengths, extra tokens past offsets[B]), as the jagged
# forward's cases: empty sequences, lengths not a multiple of 64 or 128, a
# window shared by short sequences, tokens past the last offset.
JAGGED_TRAIN_CASES = [
    ("kunlun_train_jagged_h2", [300, 0, 128, 1, 77, 512, 5], 9),
    ("kunlun_train_jagged_h2", [3, 9, 1, 40, 2, 100, 30, 17, 0, 64], 45),
    ("kunlun_train_jagged_h2", [(i * 37) % 512 + 1 for i in range(64)], 0),
    ("train_jagged_d64_kv40", [200, 33, 0, 57, 1], 11),
]


def jagged_reference(inputs, offsets, dout, eps):
    """out and the six gradients by autograd of the jagged block."""
    q, k, v, lnw, lnb, rmsw = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = jagged_block(q, k, v, offsets, lnw, lnb, rmsw, eps)
    grads = torch.autograd.grad(out, [q, k, v, lnw, lnb, rmsw], dout)
    return (out.detach(),) + tuple(grads)


@pytest.mark.parametrize("name,lengths,extra", JAGGED_TRAIN_CASES,
                         ids=lambda x: f"B{len(x)}" if isinstance(x, list) else None)
def test_train_step_jagged(name, lengths, extra):
    """out and every gradient of the jagged block's training step (its
    forward the jagged FlashNormAttention kernel saving ln_q and h)."""
    prog = PROGRAMS.get(name)
    fn = function(name)
    h, d, kv = prog["heads"], prog["d"], prog["kv"]
    offsets, bounds, randn = jagged_block_case(prog, lengths, extra, 4000)
    batch, tokens = len(lengths), bounds[-1] + extra
    inputs = (randn(tokens, h, d), randn(batch, kv, h, d, scale=d ** -0.5),
              randn(batch, kv, h, d), randn(h * d, scale=0.1, shift=1.0),
              randn(h * d, scale=0.1), randn(h * d, scale=0.1, shift=1.0))
    dout = randn(tokens, h, d)
    q = inputs[0]
    kvs = torch.full((batch, kv, h, d), float("nan"), dtype=q.dtype, device="cuda")
    outs = [torch.full_like(q, float("nan")), torch.full_like(q, float("nan")), kvs,
            kvs.clone()] + [torch.full((h * d,), float("nan"), device="cuda") for _ in range(3)]
    fn(q, inputs[1], inputs[2], offsets, *inputs[3:], dout, *outs)
    torch.cuda.synchronize()
    ref64 = jagged_reference([t.double() for t in inputs], offsets, dout.double(), prog["eps"])
    ref16 = jagged_reference(inputs, offsets, dout, prog["eps"])
    check(name, batch, tokens, ("out",) + GRAD_LABELS, outs, ref64, ref16)
