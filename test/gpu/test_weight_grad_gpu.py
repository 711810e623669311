"""The weight-gradient GEMM on the H200: `fusion.matmul %dy, %x
{transpose_lhs}` (nn.Linear's dW = dy^T x, lhs [tokens, out] read M-major
by TMA), each alone in a program (bench/layers/gen_layers.py,
linear_wgrad_h{H}; h4160: 33 row blocks and a partial last column block,
an odd row-block count for CTA pairs) compiled into $FUSION_GPU_ARTIFACTS/layers/. The token
count is the GEMM's K and stays dynamic: M = 65536, the odd 4097 and 100
(K not a multiple of the 64-deep K step), 1 and 7. Against float64 on fresh
random inputs, the output poisoned with NaN: relative error at most 2x
PyTorch's own bf16 GEMM (cuBLAS) + 1e-3. Compiled with `fusion-compile
--split-k`, the small outputs (768, 1024) split K into ranges whose f32
partial sums are added in a fixed order: dW is then bitwise the same over
two calls (checked for every library, split or not).

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_weight_grad_gpu.py
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the weight-gradient libraries run only on the H200",
                allow_module_level=True)
import layers_ref as lr  # noqa: E402

ARTIFACTS = lr.artifacts_dir()
PROGRAMS = lr.load_manifest(ARTIFACTS)
if PROGRAMS is None:
    pytest.skip(f"{ARTIFACTS}/layers/layers.json not built (bench/build_gpu_artifacts.sh)",
                allow_module_level=True)
LIBS = lr.Libraries(ARTIFACTS)
HS = (512, 768, 1024, 2048, 4096)
FLOOR = 1e-3


def make_case(h, m, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dy = torch.randn(m, h, generator=gen, device="cuda").bfloat16()
    x = torch.randn(m, h, generator=gen, device="cuda").bfloat16()
    return dy, x


def run(name, m, seed=1):
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ARTIFACTS}/layers/layers.json")
    prog = PROGRAMS[name]
    fn = LIBS.function(prog, "fused")
    if fn is None:
        pytest.skip(f"{LIBS.path(name, 'fused')} not built (bench/build_gpu_artifacts.sh printed why)")
    dy, x = make_case(prog["h"], m, seed * 7919 + m)
    dw = lr.make_outputs(prog, m)["dw"]
    fn(dy, x, dw)
    torch.cuda.synchronize()
    return dy, x, dw


@pytest.mark.parametrize("name,m", [(f"linear_wgrad_h{h}", m) for h in HS for m in (65536, 4097)]
                         + [(f"linear_wgrad_h{h}", m) for h in (768, 1024, 4096) for m in (100, 7, 1)]
                         + [("linear_wgrad_h4160", m) for m in (65536, 4097, 100)])
def test_weight_grad(name, m):
    dy, x, dw = run(name, m)
    assert not torch.isnan(dw).any(), f"{int(torch.isnan(dw).sum())} elements not written"
    ref = dy.double().T @ x.double()
    ours, theirs = lr.rel_error(dw, ref), lr.rel_error(dy.T @ x, ref)
    print(f"{name} M={m}: rel err {ours:.3e} (torch bf16 {theirs:.3e})")
    assert ours <= 2 * theirs + FLOOR, f"{name} M={m}: rel err {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"


@pytest.mark.parametrize("name,m", [(f"linear_wgrad_h{h}", m) for h in (768, 1024, 4096)
                                    for m in (65536, 4097)])
def test_weight_grad_deterministic(name, m):
    _, _, first = run(name, m, seed=3)
    _, _, second = run(name, m, seed=3)
    assert torch.equal(first, second), f"{name} M={m}: dW differs between two calls"
