#!/usr/bin/env python3
"""Runs one compiled benchmark or correctness case a few times, for a
profiler (ncu) to attach to:

    ncu --section SpeedOfLight python3 bench/profile_case.py bench_lazy_rms_4096

Cases come from $FUSION_GPU_ARTIFACTS (default build/gpu): bench.json and
libbench.so, then correctness.json and libcorrectness.so."""
import json
import os
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import fusion_runtime as fr  # noqa: E402
from fused_matmul_reference import make_inputs, make_outputs  # noqa: E402

art = os.environ.get("FUSION_GPU_ARTIFACTS", os.path.join(REPO, "build", "gpu"))
name = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
for suite in ("bench", "correctness"):
    cases = json.load(open(os.path.join(art, f"{suite}.json")))
    case = next((c for c in cases if c["name"] == name), None)
    if case:
        break
else:
    sys.exit(f"no case named {name}")
lib = fr.Library(os.path.join(art, f"lib{suite}.so"),
                 runtime=os.path.join(art, "libfusion_runtime.so"))
x = make_inputs(case, torch.Generator(device="cuda").manual_seed(1))
y = make_outputs(case)
fn = lib.function(name, case["signature"])
for _ in range(reps):
    fn(*x.values(), *y.values())
torch.cuda.synchronize()
print(name, "ran", reps, "times")
