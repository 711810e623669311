"""The bundled example end to end on the H200: examples/transformer_block.mlir
compiled by fusion-compile (fusion-fuse, then the sm_90a kernels: a Lazy
Pre-Norm GEMM, a device buffer, a GEMM with the residual LayerNorm epilogue)
into $FUSION_GPU_ARTIFACTS/libexample.so, against float64 PyTorch.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v test/gpu/test_example_gpu.py
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
import fusion_runtime as fr  # noqa: E402

ARTIFACTS = os.environ.get("FUSION_GPU_ARTIFACTS", os.path.join(REPO, "build", "gpu"))
LIBRARY = os.path.join(ARTIFACTS, "libexample.so")
if not os.path.exists(LIBRARY):
    pytest.skip(f"{LIBRARY} not built", allow_module_level=True)
SIGNATURE = "x: bf16[64,128]; w1: bf16[128,256]; w2: bf16[256,128]; y: bf16[64,128]"


def block(x, w1, w2, dtype):
    x, w1, w2 = x.to(dtype), w1.to(dtype), w2.to(dtype)
    n = torch.nn.functional.rms_norm(x.float(), (128,), eps=1e-5).to(dtype) \
        if dtype != torch.float64 else x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    s = (n @ w1) @ w2 + x
    return torch.nn.functional.layer_norm(s, (128,), eps=1e-5)


@pytest.mark.parametrize("function", ["block_unfused", "block_fused"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_block(function, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(64, 128, generator=g, device="cuda").bfloat16()
    w1 = (torch.randn(128, 256, generator=g, device="cuda") / 128 ** 0.5).bfloat16()
    w2 = (torch.randn(256, 128, generator=g, device="cuda") / 256 ** 0.5).bfloat16()
    y = torch.full((64, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    lib = fr.Library(LIBRARY, runtime=os.path.join(ARTIFACTS, "libfusion_runtime.so"))
    lib.function(function, SIGNATURE)(x, w1, w2, y)
    torch.cuda.synchronize()
    assert not torch.isnan(y).any(), "output not fully written"
    ref = block(x, w1, w2, torch.float64)
    err = ((y.double() - ref).norm() / ref.norm()).item()
    err_torch = ((block(x, w1, w2, torch.bfloat16).double() - ref).norm() / ref.norm()).item()
    print(f"{function} seed {seed}: rel err ours {err:.3e}, torch bf16 {err_torch:.3e}")
    assert err <= 2 * err_torch + 1e-3
