"""Times gdpa_grad with its RMSNorm-gradient prologue (gdpa_grad_rms_kunlun_h2 / _h4 of
gen_attention.py) against gdpa_grad with dh as its residual (gdpa_grad_residual_do_kunlun), the
loader call under do_bench; writes $OUT/time_prologue.json. On the H200:

    FUSION_GPU_ARTIFACTS=build/gpu OUT=. python3 bench/attention/time_rms_prologue.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "gpu"))
import torch  # noqa: E402
import triton  # noqa: E402
from test_attention_gpu import PROGRAMS, function
import test_attention_grad_prologue_gpu as tp
import test_attention_grad_gpu as tg
res = {}
for name, b, lq in (("gdpa_grad_rms_kunlun_h2", 768, 512), ("gdpa_grad_rms_kunlun_h4", 768, 1024)):
    prog = PROGRAMS.get(name)
    inputs = tp.make_case(prog, b, lq, 1)
    fn = function(name)
    outs = [torch.empty_like(t) for t in inputs[1:4]] + [torch.empty(inputs[6].numel(), device="cuda")]
    res[name] = triton.testing.do_bench(lambda: fn(*inputs, *outs), warmup=25, rep=200)
    base = "gdpa_grad_residual_do_kunlun" if "h2" in name else None
    if base:
        p2 = PROGRAMS.get(base)
        do, q, k, v = tg.make_case(p2, b, lq, 1)
        fn2 = function(base)
        o2 = [torch.empty_like(t) for t in (q, k, v)]
        res[base] = triton.testing.do_bench(lambda: fn2(do, q, k, v, *o2), warmup=25, rep=200)
print(json.dumps(res))
json.dump(res, open(os.environ.get("OUT", "/tmp") + "/time_prologue.json", "w"))
