#!/usr/bin/env python3
"""Does where the output lies change a standalone norm's time? (issue 14)

At 262144 x 1024 bf16 our norm kernels measured 1.2-1.8% slower than
torch.compile's Triton kernels, with the same loads, stores, CTA shape and
occupancy (bench/results/HISTORY.md, sessions 16-18). One difference the
kernels do not show: the output buffers. The benchmark hands ours a y
allocated right after x; Inductor writes into blocks its caching allocator
picks per call. A copy-speed kernel's DRAM efficiency can depend on where
its write stream lies relative to its read stream (channels, banks).

This times, kernel against kernel (profiler records, interleaved rounds):
ours into y at several offsets from a fresh allocation, ours into the very
tensors torch.compile's call returned (its placement), and torch.compile's
kernels (the module, and for the programs with statistics the norm written
to return them too). Writes JSON and prints a table.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/layers/norm_placement.py \\
        --out norm_placement.json --commit abc1234 [--m 262144] [--rounds 3]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

PROGRAMS = ("rms_norm_h1024", "rms_norm_infer_h1024", "layer_norm_h1024",
            "layer_norm_infer_h1024")
# Byte offsets of y from the start of a fresh allocation (which the caching
# allocator aligns to 512 bytes): aligned, one row, 64 KB, 1 MB + one row.
OFFSETS = (0, 2048, 65536, 1048576 + 2048)
TIMING = ("*_ms: kernel device time per call (profiler records, median over ~200 ms of calls "
          "after 25 ms of warmup), the mean of interleaved rounds (bench_util.run_rounds); "
          "ours_off<B>: ours writing y at byte offset B of a fresh allocation; ours_bench: "
          "ours into y from make_outputs as bench_norms does; ours_into_compile: ours into the "
          "tensors torch.compile's call returned; compile: torch.compile of the nn module; "
          "compile_stats: of the norm returning its statistics too")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--artifacts", default=os.environ.get("FUSION_GPU_ARTIFACTS", "build/gpu"))
    p.add_argument("--out", default="norm_placement.json")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--m", type=int, default=262144)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    import torch
    import bench_util as bu
    import layers_manifest
    import layers_ref as lr
    from bench_norms import stats_function
    if not torch.cuda.is_available():
        print("norm_placement: no CUDA GPU; nothing to time")
        return 0
    programs = layers_manifest.load_manifest(a.artifacts)
    libs = lr.Libraries(a.artifacts)
    rows = []
    for name in PROGRAMS:
        prog = programs.get(name)
        fn = prog and libs.function(prog, "fused")
        if fn is None:
            print(f"norm_placement: {name} not built; skipped")
            continue
        m, errors = a.m, {}
        x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(0))
        params = [x[n] for n in ("g", "gamma", "beta") if n in x]
        y_bench = lr.make_outputs(prog, m)
        measurements = [("ours_bench", bu.kernel_ms, lambda: fn(*x.values(), *y_bench.values()))]
        stats = {s["name"]: torch.empty(lr.shape_of(s, m), dtype=lr.DTYPES[s["dtype"]],
                                        device="cuda") for s in prog["outputs"][1:]}
        y_bytes = m * prog["h"] * 2
        keep = []
        for off in OFFSETS:
            buf = torch.empty(y_bytes + off, dtype=torch.uint8, device="cuda")
            y = buf[off:].view(torch.bfloat16).view(m, prog["h"])
            keep.append(buf)
            measurements.append((f"ours_off{off}", bu.kernel_ms,
                                 lambda y=y: fn(*x.values(), y, *stats.values())))
        module, args = lr.build_module(prog, x)
        compiled = bu.compile_fresh(module)
        y_c = compiled(*args)
        measurements.append(("compile", lambda f: bu.kernel_ms(f, match="triton"),
                             lambda: compiled(*args)))
        outs_c = [y_c] + list(stats.values())
        if stats:
            fs = torch.compile(stats_function(prog), dynamic=False)
            outs_c = list(fs(x["x"], *params))
            measurements.append(("compile_stats", lambda f: bu.kernel_ms(f, match="triton"),
                                 lambda: fs(x["x"], *params)))
        torch.cuda.synchronize()
        measurements.append(("ours_into_compile", bu.kernel_ms,
                             lambda: fn(*x.values(), *outs_c)))
        # The outputs are right where each was written: check ours once.
        fn(*x.values(), *y_bench.values())
        torch.cuda.synchronize()
        check = lr.check(prog, x, y_bench)
        mean, spread, rounds = bu.run_rounds(a.rounds, measurements, errors)
        row = dict(name=name, m=m, ok=check["ok"], rel_err=check["rel_err"], errors=errors,
                   y_ptr_mod_2MB={"x": x["x"].data_ptr() % (1 << 21),
                                  "bench": y_bench["y"].data_ptr() % (1 << 21),
                                  "compile": outs_c[0].data_ptr() % (1 << 21)},
                   y_minus_x={"bench": y_bench["y"].data_ptr() - x["x"].data_ptr(),
                              "compile": outs_c[0].data_ptr() - x["x"].data_ptr()},
                   **{f"{k}_ms": v for k, v in mean.items()}, spread_ms=spread, rounds=rounds)
        ours = [v for k, v in mean.items() if k.startswith("ours")]
        if ours:
            row["ours_spread_over_placements"] = (max(ours) - min(ours)) / min(ours)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
        bu.write_json(a.out, a, rows, TIMING, complete=name == PROGRAMS[-1])
        del keep, measurements
        torch.cuda.empty_cache()
    keys = ["ours_bench"] + [f"ours_off{o}" for o in OFFSETS] + [
        "ours_into_compile", "compile", "compile_stats"]
    print("| program | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for r in rows:
        print(f"| {r['name']} | " + " | ".join(
            f"{r[k + '_ms']:.4f}" if k + "_ms" in r else "-" for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
