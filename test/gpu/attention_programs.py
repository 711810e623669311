"""The attention programs of bench/attention/gen_attention.py as the H200
scripts call them: the manifest and the compiled functions under
$FUSION_GPU_ARTIFACTS/attention (bench/build_gpu_artifacts.sh), loaded
once each with the runtime copied beside them. No torch needed to import."""
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))

import fusion_runtime as fr  # noqa: E402

ARTIFACTS = os.environ.get("FUSION_GPU_ARTIFACTS", os.path.join(REPO, "build", "gpu"))
MANIFEST = os.path.join(ARTIFACTS, "attention", "attention.json")
_functions = {}
_runtime = None


def programs():
    """{name: program} from the manifest, or None when it was not built."""
    if not os.path.exists(MANIFEST):
        return None
    with open(MANIFEST) as f:
        return {p["name"]: p for p in json.load(f)}


def jagged_offsets(prog, lengths):
    """The offsets [B + 1] of sequences of `lengths` in the program's index
    type (i32 or i64) on the GPU, and their bounds as a list."""
    import torch
    bounds = [0]
    for n in lengths:
        bounds.append(bounds[-1] + n)
    dtype = torch.int32 if prog["offsets_dtype"] == "i32" else torch.int64
    return torch.tensor(bounds, dtype=dtype, device="cuda"), bounds


def library_path(name, variant=""):
    """lib<name>.so, or lib<name>_unfused.so for a block's four kernels
    (fusion-plan-kernels folds + ln_q into the gdpa)."""
    return os.path.join(ARTIFACTS, "attention", f"lib{name}{variant}.so")


def function(prog, variant=""):
    """The compiled function of `prog` (a manifest entry), loaded once."""
    global _runtime
    path = library_path(prog["name"], variant)
    if path not in _functions:
        if _runtime is None:
            copy = os.path.join(ARTIFACTS, "libfusion_runtime.so")
            _runtime = fr.Runtime.find(copy if os.path.exists(copy) else None)
        _functions[path] = fr.Library(path, runtime=_runtime).function(
            prog["name"], prog["signature"])
    return _functions[path]


def block_saved(q, k, v, lnw, lnb, eps, gdpa):
    """What the Kunlun block's forward saves for its backward, as our forward
    computes it: ln_q and h = gdpa(ln_q, k, v) + ln_q in bf16, the LayerNorm
    mean and rstd and the RMSNorm rstd in f32 per token. Contiguous, as the
    compiled backward takes them."""
    b, lq, h, d = q.shape
    qf = q.float().reshape(b, lq, h * d)
    mean = qf.mean(-1)
    rstd = (qf.var(-1, unbiased=False) + eps).rsqrt()
    ln = ((qf - mean[..., None]) * rstd[..., None] * lnw.float() + lnb.float())
    ln = ln.bfloat16().reshape(q.shape).contiguous()
    hsum = (gdpa(ln, k, v).float() + ln.float()).bfloat16().contiguous()
    rms_rstd = (hsum.float().reshape(b, lq, h * d).pow(2).mean(-1) + eps).rsqrt()
    return ln, hsum, mean, rstd, rms_rstd
