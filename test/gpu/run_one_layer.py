"""Runs one compiled layer program of bench/layers/gen_layers.py once, on
fresh random inputs and NaN-poisoned outputs, for compute-sanitizer: no
reference is computed, so no cuBLAS kernel runs in the process (racecheck
reports cuBLAS's own hazards), and every kernel is ours or a simple PyTorch
fill/reduction.

    compute-sanitizer --tool racecheck python3 test/gpu/run_one_layer.py NAME M [fused|unfused]
"""
import os
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))
import layers_ref as lr  # noqa: E402

name, m = sys.argv[1], int(sys.argv[2])
variant = sys.argv[3] if len(sys.argv) > 3 else "fused"
art = lr.artifacts_dir()
prog = (lr.load_manifest(art) or {}).get(name)
if prog is None:
    sys.exit(f"run_one_layer: {name} is not in {art}/layers/layers.json")
fn = lr.Libraries(art).function(prog, variant)
if fn is None:
    sys.exit(f"run_one_layer: {lr.library_path(art, name, variant)} not built")
inputs = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(5))
outs = lr.make_outputs(prog, m)
fn(*inputs.values(), *outs.values())
torch.cuda.synchronize()
unwritten = {k: int(torch.isnan(v).sum()) for k, v in outs.items()}
print(f"{name} M={m} ({variant}): NaN left per output {unwritten}")
sys.exit(1 if any(unwritten.values()) else 0)
