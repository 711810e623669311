"""The device time of a training step's kernels, and of its side-kernel
region, from the profiler's records, for several artifact folders in
interleaved rounds: a steadier A/B than the user-visible call when the
variants differ by a few percent of the step (the call's rounds spread by
40-110 us on an H100 in session 52).

Per call (synchronized, so no call overlaps the next): `span`, from the
first kernel's start to the last one's end (the launches' gaps included);
`side`, the weight gradient dW2 and the norm gradient with their split-K
and parameter sums (kernel<n-1>*, kernel<n>*, the norm gradient being the
kernel with parameter sums, kernel<n>_params), from the first start to the
last end, whether they ran beside each other or one after the other;
`norm_grad`, the norm gradient's dx kernel alone (kernel<n>); and each
kernel's duration
(k_<n>, kernel<n>). Medians over the calls of all rounds, with the
interquartile range. A program that is not a training step (a layer of
gen_layers.py: bert_postnorm_h1024, ...) gets its own random inputs and
the same per-kernel records (span and k_<n>; side and norm_grad are for
the steps).

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/layers/step_spans.py \\
        --out spans.json --variants s0=build/v-s0/gpu --programs train_step_rms_h1024
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def spans(events):
    """span, side and norm_grad (us) of one call's kernel events."""
    def end(e):
        return e["ts"] + e.get("dur", 0.0)
    def index(e):  # kernel<n>[_splitk|_params] -> n
        return int(e["name"].split("_kernel", 1)[-1].split("_")[0])
    # The norm gradient: the kernel with parameter sums (kernel<n>_params);
    # the weight gradient beside it comes right before it in program order.
    params = [index(e) for e in events if e["name"].endswith("_params")]
    n = params[0] if params else None
    side = [e for e in events if n is not None and index(e) in (n - 1, n)]
    dx = [e for e in events if n is not None and e["name"].endswith(f"_kernel{n}")]
    result = dict(span=max(map(end, events)) - min(e["ts"] for e in events),
                  side=max(map(end, side)) - min(e["ts"] for e in side) if side else None,
                  norm_grad=dx[0].get("dur") if dx else None)
    for e in events:
        result["k_" + e["name"].split("_kernel", 1)[-1]] = e.get("dur")
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--programs", default="train_step_rms_h1024,train_step_ln_h1024")
    p.add_argument("--variants", default="", help="NAME=ARTIFACTS,...")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--calls", type=int, default=10, help="calls a round and folder")
    p.add_argument("--m", type=int, default=65536)
    a = p.parse_args()
    import torch

    import bench_util as bu
    import layers_ref as lr

    art = lr.artifacts_dir()
    programs = lr.load_manifest(art)
    folders = [("ours", lr.Libraries(art))]
    folders += [(s.split("=", 1)[0], lr.Libraries(s.split("=", 1)[1]))
                for s in a.variants.split(",") if s]
    for _, libs in folders[1:]:
        libs.runtime = folders[0][1].runtime
    rows = []
    for name in a.programs.split(","):
        prog = programs.get(name)
        if prog is None:
            print(f"{name}: not built, skipped", flush=True)
            continue
        if name.startswith("train_step"):
            norm = "ln" if "_ln_" in name else "rms"
            inputs = lr.make_train_case(prog["h"], a.m, 11, norm)
        else:
            # Any other layer (a post-norm's kernels A/B): its own inputs.
            inputs = lr.make_inputs(prog, a.m, torch.Generator(device="cuda").manual_seed(11))
        calls = {}
        for fname, libs in folders:
            fn = libs.function(prog, "fused")
            if fn is not None:
                outs = lr.make_outputs(prog, a.m)
                calls[fname] = lambda fn=fn, outs=outs: fn(*inputs.values(), *outs.values())
        samples = {f: [] for f in calls}
        for _ in range(a.rounds):
            for fname, call in calls.items():
                events = sorted(bu._kernel_events(call, a.calls, synchronize_each=True),
                                key=lambda e: e["ts"])
                per = len(events) // a.calls
                for c in range(a.calls):
                    samples[fname].append(spans(events[c * per:(c + 1) * per]))
        row = dict(name=name, m=a.m)
        for fname, s in samples.items():
            keys = ["span", "side", "norm_grad"] + sorted({k for x in s for k in x if k.startswith("k_")})
            for key in keys:
                values = [x[key] for x in s if x.get(key) is not None]
                if values:
                    row[f"{fname}_{key}_us"] = round(statistics.median(values), 1)
                    row[f"{fname}_{key}_spread_us"] = round(
                        statistics.quantiles(values, n=4)[2] - statistics.quantiles(values, n=4)[0], 1)
        print(row, flush=True)
        rows.append(row)
        bu.write_json(a.out, a, rows, {"rounds": a.rounds, "calls": a.calls}, True)


if __name__ == "__main__":
    main()
