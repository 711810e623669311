#!/usr/bin/env python3
"""How do Inductor's norm kernels launch, against ours? (issue 14)

At 65536 x 1024 bf16 our LayerNorm kernel is 1-1.5% (0.7-1 us) slower than
torch.compile's Triton kernel, at 262144 x 1024 the two are equal
(bench/results/HISTORY.md, session 19): a cost that does not grow with the
rows, so not the loads and stores, which are the same. What the kernels'
code does not show is how they launch. This runs ours and torch.compile's
module under the profiler and prints, per kernel, its grid, block,
registers per thread, shared memory and device time (the Kineto trace's
kernel records), and writes the Triton source Inductor generated for each
case (from torch._inductor's output_code log) next to the JSON.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/layers/norm_launch_config.py \\
        --out norm_launch_config.json [--cases layer_norm_infer_h1024:65536,...]
"""
import argparse
import json
import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

CASES = ("layer_norm_infer_h1024:65536", "layer_norm_infer_h1024:262144",
         "rms_norm_infer_h1024:65536", "rms_norm_infer_h1024:262144",
         "layer_norm_h1024:65536")


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--artifacts", default=os.environ.get("FUSION_GPU_ARTIFACTS", "build/gpu"))
    p.add_argument("--out", default="norm_launch_config.json")
    p.add_argument("--cases", default=",".join(CASES),
                   help="program:M pairs, comma-separated")
    a = p.parse_args()
    import torch
    import torch._inductor.config  # noqa: F401 (registers the output_code log)
    import bench_util as bu
    import layers_manifest
    import layers_ref as lr
    if not torch.cuda.is_available():
        print("norm_launch_config: no CUDA GPU; nothing to probe")
        return 0
    torch._logging.set_logs(output_code=True)
    capture = _Capture()
    logging.getLogger("torch._inductor").addHandler(capture)
    programs = layers_manifest.load_manifest(a.artifacts)
    libs = lr.Libraries(a.artifacts)
    out_dir = os.path.dirname(os.path.abspath(a.out))
    results = []
    for case in a.cases.split(","):
        name, m = case.split(":")
        m = int(m)
        prog = programs[name]
        row = dict(name=name, m=m)
        with torch.no_grad():
            x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(0))
            y = lr.make_outputs(prog, m)
            fn = libs.function(prog, "fused")
            row["ours"] = bu.kernel_records(lambda: fn(*x.values(), *y.values()))
            module, args = lr.build_module(prog, x)
            capture.records.clear()
            compiled = bu.compile_fresh(module)
            row["compile"] = bu.kernel_records(lambda: compiled(*args))
        code = "\n\n".join(capture.records)
        code_path = os.path.join(out_dir, f"inductor_{name}_m{m}.py.txt")
        with open(code_path, "w") as f:
            f.write(code)
        row["inductor_code"] = os.path.basename(code_path)
        results.append(row)
        for side in ("ours", "compile"):
            for k in row[side]:
                print(f"{name} M={m} {side:8s} {k['name'][:60]:60s} grid={k['grid']} "
                      f"block={k['block']} regs={k['registers']} smem={k['shared_memory']} "
                      f"blocks/SM={k['blocks_per_sm']} {k['median_us']:.2f} us", flush=True)
        with open(a.out, "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(), cases=results), f, indent=1)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
