"""The standalone norm-gradient kernels on the H200: fusion.rms_norm_grad
(with its weight: dx and dweight) and fusion.layer_norm_grad (weight and
bias gradients: dx, dgamma, dbeta), each alone in a program
(bench/layers/gen_layers.py) compiled into $FUSION_GPU_ARTIFACTS/layers/ by
bench/build_gpu_artifacts.sh. The saved statistics are those of the
forward (computed from x in float64 and stored in f32, as the forward row
kernel stores them). Against PyTorch's autograd in float64 on fresh random
inputs, outputs poisoned with NaN: each gradient's relative error at most 2x
autograd's own bf16 error + 1e-3. Rows of H = 768..4096 and the odd
H = 1000 and 1001; M = 65536, the odd 4097, and 1 and 7 (fewer rows than
one CTA's groups; at H = 768 a CTA holds 8 one-warp groups); the
parameter gradients bitwise identical across two calls (a fixed reduction
order, no atomics).

With a residual gradient (the *_res programs: dx = the norm's input
gradient + dr, written as a fusion.add, which fusion-plan-kernels folds into
the norm gradient's residual, so the dx kernel reads dr and no add kernel
runs): RMSNorm and LayerNorm at H = 768, 1000 and 1001 (element accesses)
with M = 4097 (1001 also with M = 7), 1000 and 4096 with M = 65536; dr f32
beside the bf16 data (layer_norm_grad_res32) at H = 768 and 1000, M = 4097
and 65536. The reference adds dr to autograd's dx (float64; PyTorch's bf16
path adds in bf16). Each of these libraries holds the dx kernel and the
parameter gradients' reduction only (the add was folded).

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_norm_grads_gpu.py
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the norm-gradient libraries run only on the H200",
                allow_module_level=True)
import layers_ref as lr  # noqa: E402

ARTIFACTS = lr.artifacts_dir()
PROGRAMS = lr.load_manifest(ARTIFACTS)
if PROGRAMS is None:
    pytest.skip(f"{ARTIFACTS}/layers/layers.json not built (bench/build_gpu_artifacts.sh)",
                allow_module_level=True)
LIBS = lr.Libraries(ARTIFACTS)

KINDS = ("rms_norm_grad", "layer_norm_grad")
HS = (768, 1024, 2048, 4096, 1000, 1001)
RES_KINDS = ("rms_norm_grad_res", "layer_norm_grad_res")
FLOOR = 1e-3


def make_case(prog, m, seed):
    """Inputs in call order (dy, x, [mean], rstd, weight, [dr]) and the
    float64 and bf16 autograd references of the outputs."""
    h, eps = prog["h"], prog["eps"]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(m, h, generator=gen, device="cuda") + 0.5).bfloat16()
    dy = torch.randn(m, h, generator=gen, device="cuda").bfloat16()
    w = (1.0 + 0.5 * torch.randn(h, generator=gen, device="cuda")).bfloat16()
    x64 = x.double()
    layer = prog["kind"].startswith("layer_norm_grad")
    mean = x64.mean(-1) if layer else None
    centered = x64 - mean[:, None] if layer else x64
    rstd = torch.rsqrt(centered.pow(2).mean(-1) + eps)
    inputs = {"dy": dy, "x": x}
    if layer:
        inputs["mean"] = mean.float()
    inputs["rstd"] = rstd.float()
    inputs["gamma" if layer else "g"] = w
    dr = [spec for spec in prog["inputs"] if spec["name"] == "dr"]
    if dr:
        inputs["dr"] = torch.randn(m, h, generator=gen, device="cuda").to(lr.DTYPES[dr[0]["dtype"]])
    return (inputs, lr.norm_grad_reference(prog, inputs, torch.float64),
            lr.norm_grad_reference(prog, inputs, torch.bfloat16))


def run(name, m, seed=1):
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ARTIFACTS}/layers/layers.json")
    prog = PROGRAMS[name]
    fn = LIBS.function(prog, "fused")
    if fn is None:
        pytest.skip(f"{LIBS.path(name, 'fused')} not built (the compiler refused it: "
                    f"bench/build_gpu_artifacts.sh printed why)")
    inputs, ref64, ref16 = make_case(prog, m, seed * 7919 + m)
    outs = lr.make_outputs(prog, m)
    fn(*inputs.values(), *outs.values())
    torch.cuda.synchronize()
    return prog, fn, inputs, outs, ref64, ref16


def check_case(name, m):
    """Runs the program on a fresh case and checks every output against
    float64 autograd: no NaN left, relative error within 2x PyTorch's bf16
    error + FLOOR. Prints the errors."""
    prog, fn, inputs, outs, ref64, ref16 = run(name, m)
    report = []
    for (out_name, got), want, torch16 in zip(outs.items(), ref64, ref16):
        assert not torch.isnan(got).any(), f"{out_name}: {int(torch.isnan(got).sum())} NaN left"
        ours, theirs = lr.rel_error(got, want), lr.rel_error(torch16, want)
        report.append(f"{out_name} {ours:.2e} (torch bf16 {theirs:.2e})")
        assert ours <= 2 * theirs + FLOOR, f"{name} M={m} {out_name}: rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"
    print(f"{name} M={m}: " + ", ".join(report))


@pytest.mark.parametrize("name,m", [(f"{k}_h{h}", m) for k in KINDS for h in HS
                                    for m in (65536, 4097)]
                         + [(f"{k}_h{h}", m) for k in KINDS for h in (768, 1024, 1001)
                            for m in (1, 7)]
                         # Narrow rows, M leaving a CTA's row groups different
                         # row counts (a hang before session 23's fix).
                         + [(f"{k}_h{h}", m) for k in KINDS for h in (192, 384)
                            for m in (65536, 4097, 302, 7)])
def test_norm_grad(name, m):
    check_case(name, m)


@pytest.mark.parametrize("name,m", [(f"{k}_h{h}", 4097) for k in RES_KINDS for h in (768, 1000, 1001)]
                         + [(f"{k}_h{h}", 65536) for k in RES_KINDS for h in (1000, 4096)]
                         + [(f"{k}_h1001", 7) for k in RES_KINDS]
                         + [(f"layer_norm_grad_res32_h{h}", m) for h in (768, 1000)
                            for m in (4097, 65536)])
def test_norm_grad_residual(name, m):
    """A norm gradient plus the residual branch's gradient, as the fold of
    the user's fusion.add into the norm gradient computes it."""
    check_case(name, m)


@pytest.mark.parametrize("name", [f"{k}_h{h}" for k in RES_KINDS for h in (768, 1000, 1001, 4096)]
                         + [f"layer_norm_grad_res32_h{h}" for h in (768, 1000)])
def test_residual_add_folded(name):
    """The library names its kernels <function>_kernel<i> (and _params): the
    norm gradient's dx kernel is kernel0, and no kernel1 (the add) exists."""
    path = LIBS.path(name, "fused")
    if not os.path.exists(path):
        pytest.skip(f"{path} not built")
    with open(path, "rb") as f:
        text = f.read()
    assert f"{name}_kernel0".encode() in text
    assert f"{name}_kernel1".encode() not in text, f"{name}: the residual's add has a kernel of its own"


@pytest.mark.parametrize("name", [f"{k}_h{h}" for k in KINDS for h in (768, 1024, 4096)])
def test_param_grads_are_deterministic(name):
    prog, fn, inputs, outs, _, _ = run(name, 65536, seed=3)
    again = lr.make_outputs(prog, 65536)
    fn(*inputs.values(), *again.values())
    torch.cuda.synchronize()
    for out_name in list(outs)[1:]:
        assert torch.equal(outs[out_name], again[out_name]), f"{name}: {out_name} differs run to run"
