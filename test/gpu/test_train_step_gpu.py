"""A whole training step on the H200 from one function: Linear (W1, [out,
in]) -> RMSNorm (weight g) -> Linear (W2), given the output gradient dy,
returning y, dx, dW1, dg and dW2 (bench/layers/gen_layers.py,
train_step_rms_h{H}), and the same with LayerNorm (weight gamma, bias beta;
y, dx, dW1, dgamma, dbeta, dW2: train_step_ln_h{H}): forward GEMMs, the standalone norm with its rstd, the
dgrad GEMMs, the weight-gradient GEMMs dy^T x and the norm's gradient
kernels, compiled by fusion-compile into $FUSION_GPU_ARTIFACTS/layers/).
Against PyTorch autograd of the same nn.Module in float64 on fresh random
inputs, outputs poisoned with NaN: every output within 2x autograd's own
bf16 error + 1e-3; the norm's parameter gradients bitwise the same over
two calls.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_train_step_gpu.py
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the training-step libraries run only on the H200",
                allow_module_level=True)
from torch import nn  # noqa: E402

import layers_ref as lr  # noqa: E402

ARTIFACTS = lr.artifacts_dir()
PROGRAMS = lr.load_manifest(ARTIFACTS)
if PROGRAMS is None:
    pytest.skip(f"{ARTIFACTS}/layers/layers.json not built (bench/build_gpu_artifacts.sh)",
                allow_module_level=True)
LIBS = lr.Libraries(ARTIFACTS)
FLOOR = 1e-3


class Block(nn.Module):
    """What the program computes, as a PyTorch user writes it."""

    def __init__(self, h, eps, dtype, norm="rms"):
        super().__init__()
        self.fc1 = nn.Linear(h, h, bias=False, device="cuda", dtype=dtype)
        kind = nn.RMSNorm if norm == "rms" else nn.LayerNorm
        self.norm = kind(h, eps=eps, device="cuda", dtype=dtype)
        self.fc2 = nn.Linear(h, h, bias=False, device="cuda", dtype=dtype)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)))


def norm_of(prog):
    return "ln" if prog["kind"] == "train_step_ln" else "rms"


def make_case(h, m, seed, norm="rms"):
    """Inputs in call order: x, W1, the norm's weight (g; or gamma, beta), W2, dy."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen, device="cuda")  # noqa: E731
    case = {"x": rnd(m, h).bfloat16(), "w1": (rnd(h, h) * h ** -0.5).bfloat16()}
    if norm == "rms":
        case["g"] = (1.0 + 0.5 * rnd(h)).bfloat16()
    else:
        case["gamma"], case["beta"] = (1.0 + 0.5 * rnd(h)).bfloat16(), (0.5 * rnd(h)).bfloat16()
    case.update(w2=(rnd(h, h) * h ** -0.5).bfloat16(), dy=rnd(m, h).bfloat16())
    return case


def make_block(inputs, h, eps, dtype, norm="rms"):
    block = Block(h, eps, dtype, norm)
    with torch.no_grad():
        block.fc1.weight.copy_(inputs["w1"])
        block.norm.weight.copy_(inputs["g" if norm == "rms" else "gamma"])
        if norm == "ln":
            block.norm.bias.copy_(inputs["beta"])
        block.fc2.weight.copy_(inputs["w2"])
    return block


def autograd_step(inputs, h, eps, dtype, norm="rms"):
    """The program's outputs (y, dx, dW1, dg, dW2; with LayerNorm y, dx,
    dW1, dgamma, dbeta, dW2) of the module in dtype."""
    block = make_block(inputs, h, eps, dtype, norm)
    x = inputs["x"].to(dtype).requires_grad_()
    y = block(x)
    y.backward(inputs["dy"].to(dtype))
    params = (block.norm.weight.grad,) + ((block.norm.bias.grad,) if norm == "ln" else ())
    return (y.detach(), x.grad, block.fc1.weight.grad) + params + (block.fc2.weight.grad,), block, x


def run(name, m, seed=1):
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ARTIFACTS}/layers/layers.json")
    prog = PROGRAMS[name]
    fn = LIBS.function(prog, "fused")
    if fn is None:
        pytest.skip(f"{LIBS.path(name, 'fused')} not built (bench/build_gpu_artifacts.sh printed why)")
    inputs = make_case(prog["h"], m, seed * 7919 + m, norm_of(prog))
    outs = lr.make_outputs(prog, m)
    fn(*inputs.values(), *outs.values())
    torch.cuda.synchronize()
    return prog, fn, inputs, outs


CASES = [(f"train_step_{norm}_h{h}", m) for norm in ("rms", "ln")
         for h in (512, 768, 1024, 2048, 4096) for m in (65536, 4097)]
CASES += [("train_step_rms_h1024", 7), ("train_step_rms_h768", 1), ("train_step_rms_h512", 100),
          ("train_step_ln_h1024", 7), ("train_step_ln_h768", 1), ("train_step_ln_h512", 100)]


@pytest.mark.parametrize("name,m", CASES)
def test_train_step(name, m):
    prog, fn, inputs, outs = run(name, m)
    norm = norm_of(prog)
    ref64, _, _ = autograd_step(inputs, prog["h"], prog["eps"], torch.float64, norm)
    ref16, _, _ = autograd_step(inputs, prog["h"], prog["eps"], torch.bfloat16, norm)
    report = []
    for (out_name, got), want, theirs16 in zip(outs.items(), ref64, ref16):
        assert not torch.isnan(got).any(), f"{out_name}: {int(torch.isnan(got).sum())} NaN left"
        ours, theirs = lr.rel_error(got, want), lr.rel_error(theirs16, want)
        report.append(f"{out_name} {ours:.2e} (torch bf16 {theirs:.2e})")
        assert ours <= 2 * theirs + FLOOR, f"{name} M={m} {out_name}: {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"
    print(f"{name} M={m}: " + ", ".join(report))
    again = lr.make_outputs(prog, m)
    fn(*inputs.values(), *again.values())
    torch.cuda.synchronize()
    for param in ("dg", "dgamma", "dbeta"):
        if param in outs:
            assert torch.equal(outs[param], again[param]), f"{param} differs run to run"
