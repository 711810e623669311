"""Runs one compiled correctness case once (for compute-sanitizer):
    compute-sanitizer --tool memcheck python3 test/gpu/run_one_case.py NAME"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "runtime", "python"))
sys.path.insert(0, HERE)
import fusion_runtime as fr  # noqa: E402
from fused_matmul_reference import make_inputs, make_outputs, reference, rel_error  # noqa: E402

art = os.environ.get("FUSION_GPU_ARTIFACTS", "build/gpu")
case = next(c for c in json.load(open(os.path.join(art, "correctness.json"))) if c["name"] == sys.argv[1])
lib = fr.Library(os.path.join(art, "libcorrectness.so"), runtime=os.path.join(art, "libfusion_runtime.so"))
x, y = make_inputs(case, torch.Generator(device="cuda").manual_seed(3)), make_outputs(case)
lib.function(case["name"], case["signature"])(*x.values(), *y.values())
torch.cuda.synchronize()
print(case["name"], "rel err", rel_error(y["y"], reference(case, x, torch.float64)["y"]))
