#!/usr/bin/env python3
"""Standalone RMSNorm (weight, rstd saved) and LayerNorm (weight, bias, mean
and rstd saved) kernels of the layer programs (bench/layers/gen_layers.py:
rms_norm_h{H}, layer_norm_h{H}, dynamic M), bf16, per docs/PERF.md: ours as
the loader call (do_bench, L2 flushed) and as its kernels' own time
(profiler), against the nn.RMSNorm / nn.LayerNorm module in eager and under
torch.compile (compiled fresh and static per case), and a plain device copy
of the same [M, H] tensor (dst.copy_(x)): the bandwidth ceiling. Reports
TB/s = bytes moved / time, each with its own bytes: ours reads x and the
parameters and writes y and the statistics; torch's modules the same less
the statistics; the copy reads and writes [M, H]. Checks ours against
float64 in the same run. Writes JSON (rewritten after every case), prints a
markdown table; a missing library or a failing measurement is reported and
skipped.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/bench_norms.py --artifacts build/gpu \\
        --out bench_norms.json --commit abc1234 [--only REGEX] [--variant fused|unfused]

About 1.5 minutes on an H200 (8 cases).
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "layers"))

SHAPES = ((65536, 768), (65536, 1024), (65536, 4096), (262144, 1024))
# The programs with statistics (a training forward), and their inference
# forms (y only: the statistics are not written).
OPS = ("rms_norm", "layer_norm", "rms_norm_infer", "layer_norm_infer")
TIMING = ("ours_call_ms: do_bench median (warmup 25 ms, rep 200 ms, L2 flushed) of the loader "
          "call, asynchronous on the current stream; ours_kernel_ms: our kernels' device time "
          "per call (profiler records, bench_fused_matmul.kernel_ms), compile_kernel_ms the same of "
          "torch.compile's Triton kernels; eager_ms, compile_ms, "
          "copy_ms: do_bench medians of the nn module in eager, under torch.compile compiled "
          "fresh and static, and of dst.copy_(x); compile_stats_ms / compile_stats_kernel_ms "
          "(programs with statistics only): torch.compile of the norm written to return its "
          "statistics too (the same outputs as ours, as a training forward saves them); each the mean of the interleaved rounds "
          "(shuffled after the first, each measurement after 300 ms of its own function: "
          "bench_util.run_rounds); "
          "*_TBps = that side's bytes (the *_bytes fields) / its time")


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def stats_function(prog):
    """The norm as a function returning y and its statistics (rstd; LayerNorm
    mean and rstd), in float32 like nn.RMSNorm / nn.LayerNorm: what a
    training forward writes, so torch.compile writes the outputs ours does."""
    import torch
    eps, layer = prog["eps"], prog["kind"] == "layer_norm"

    def norm(x, w, b=None):
        t = x.float()
        if layer:
            mean = t.mean(-1)
            t = t - mean[:, None]
        rstd = torch.rsqrt(t.pow(2).mean(-1) + eps)
        y = t * rstd[:, None] * w.float()
        if layer:
            return (y + b.float()).to(x.dtype), mean, rstd
        return y.to(x.dtype), rstd
    return norm


def bench_case(prog, m, libs, a, lr, bu):
    import torch
    row = dict(name=prog["name"], op=prog["kind"], m=m, h=prog["h"], variant=a.variant,
               errors={})
    errors = row["errors"]
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(0))
    measurements = []
    y = lr.make_outputs(prog, m)
    row["ours_bytes"] = nbytes(list(x.values()) + list(y.values()))
    try:
        fn = libs.function(prog, a.variant)
        if fn is None:
            row["ours_status"] = "not built"
        else:
            call = lambda: fn(*x.values(), *y.values())
            call()
            torch.cuda.synchronize()
            check = lr.check(prog, x, y)
            row["rel_err"], row["torch_bf16_rel_err"] = check["rel_err"], check["torch_bf16_rel_err"]
            row.update({k: check[k] for k in ("mean_err", "rstd_err") if k in check})
            row["ok"] = check["ok"]
            if not check["ok"]:
                row["why"] = check["why"]
            measurements += [("ours_call", bu.bench_ms, call), ("ours_kernel", bu.kernel_ms, call)]
    except Exception as e:
        errors["ours"] = bu.error_text(e)
    module, args = lr.build_module(prog, x)
    row["torch_bytes"] = nbytes(list(x.values()) + [y["y"]])
    measurements.append(("eager", bu.bench_ms, lambda: module(*args)))
    try:
        compiled = bu.compile_fresh(module)
        compiled(*args)
        torch.cuda.synchronize()
        measurements.append(("compile", bu.bench_ms, lambda: compiled(*args)))
        measurements.append(("compile_kernel", lambda f: bu.kernel_ms(f, match="triton"),
                             lambda: compiled(*args)))
    except Exception as e:
        errors["compile"] = bu.error_text(e)
    if len(prog["outputs"]) > 1:
        try:
            fn_stats = torch.compile(stats_function(prog), dynamic=False)
            params = [x[n] for n in ("g", "gamma", "beta") if n in x]
            fn_stats(x["x"], *params)
            torch.cuda.synchronize()
            row["compile_stats_bytes"] = row["ours_bytes"]
            measurements.append(("compile_stats", bu.bench_ms,
                                 lambda: fn_stats(x["x"], *params)))
            measurements.append(("compile_stats_kernel", lambda f: bu.kernel_ms(f, match="triton"),
                                 lambda: fn_stats(x["x"], *params)))
        except Exception as e:
            errors["compile_stats"] = bu.error_text(e)
    src, dst = x["x"], torch.empty_like(x["x"])
    row["copy_bytes"] = 2 * nbytes([src])
    measurements.append(("copy", bu.bench_ms, lambda: dst.copy_(src)))
    mean, spread, rounds = bu.run_rounds(a.rounds, measurements, errors)
    row.update({f"{k}_ms": v for k, v in mean.items()})
    row["spread_ms"], row["rounds"] = spread, rounds
    for key, side in (("ours_call", "ours"), ("ours_kernel", "ours"), ("eager", "torch"),
                      ("compile", "torch"), ("compile_kernel", "torch"),
                      ("compile_stats", "compile_stats"), ("compile_stats_kernel", "compile_stats"),
                      ("copy", "copy")):
        if key in mean:
            row[f"{key}_TBps"] = row[f"{side}_bytes"] / (mean[key] * 1e-3) / 1e12
    if "ours_call" in mean:
        for base in ("compile", "eager", "compile_stats"):
            if base in mean:
                row[f"{base}_over_ours"] = mean[base] / mean["ours_call"]
        if "copy_TBps" in row:
            row["ours_of_copy_bw"] = row["ours_call_TBps"] / row["copy_TBps"]
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--artifacts", default=os.environ.get("FUSION_GPU_ARTIFACTS",
                                                         os.path.join(os.path.dirname(HERE),
                                                                      "build", "gpu")))
    p.add_argument("--out", default="bench_norms.json")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--only", default="", help="only the cases (e.g. rms_norm_h1024_m262144) "
                                              "whose name matches this regex")
    p.add_argument("--variant", default="fused", choices=("fused", "unfused"),
                   help="which library of ours (a standalone norm has nothing to fuse)")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds (>= 2)")
    p.add_argument("--dry-run", action="store_true", help="list the cases, time nothing")
    a = p.parse_args()
    if a.rounds < 2:
        p.error(f"--rounds: expected at least 2 (the spread needs two), but got {a.rounds}")
    import layers_manifest
    programs = layers_manifest.load_manifest(a.artifacts)
    if programs is None:
        print(f"bench_norms: {a.artifacts}/layers/layers.json not found: run "
              f"bench/build_gpu_artifacts.sh; nothing to time")
        return 0
    cases = [(f"{op}_h{h}", m) for op in OPS for m, h in SHAPES]
    cases = [(n, m) for n, m in cases if n in programs and re.search(a.only, f"{n}_m{m}")]
    if a.dry_run:
        for n, m in cases:
            lib = layers_manifest.library_path(a.artifacts, n, a.variant)
            print(f"{n} M={m}: {lib} {'found' if os.path.exists(lib) else 'not built'}")
        return 0
    import torch
    import bench_util as bu
    if not torch.cuda.is_available():
        print("bench_norms: no CUDA GPU; nothing to time")
        return 0
    import layers_ref as lr
    libs = lr.Libraries(a.artifacts)
    rows = []
    for i, (name, m) in enumerate(cases):
        try:
            with torch.no_grad():
                row = bench_case(programs[name], m, libs, a, lr, bu)
        except Exception as e:
            row = dict(name=name, m=m, errors={"case": bu.error_text(e)})
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
        bu.write_json(a.out, a, rows, TIMING, complete=i == len(cases) - 1)
        torch.cuda.empty_cache()
    if not rows:
        bu.write_json(a.out, a, rows, TIMING, complete=True)
    for r in rows:
        r["check"] = ("ok" if r["ok"] else "FAIL") if "ok" in r else r.get("ours_status", "error")
        r["error_keys"] = ",".join(r.get("errors", {})) or None
    print()
    print(bu.markdown_table([
        ("norm", "name", None), ("M", "m", None), ("ours call ms", "ours_call_ms", "{:.4f}"),
        ("ours TB/s", "ours_call_TBps", "{:.2f}"),
        ("ours kernels ms", "ours_kernel_ms", "{:.4f}"),
        ("ours kernels TB/s", "ours_kernel_TBps", "{:.2f}"),
        ("torch.compile ms", "compile_ms", "{:.4f}"), ("compile TB/s", "compile_TBps", "{:.2f}"),
        ("compile kernels ms", "compile_kernel_ms", "{:.4f}"),
        ("eager ms", "eager_ms", "{:.4f}"), ("copy TB/s", "copy_TBps", "{:.2f}"),
        ("compile / ours", "compile_over_ours", "{:.3f}x"),
        ("compile with stats ms", "compile_stats_ms", "{:.4f}"),
        ("its kernels ms", "compile_stats_kernel_ms", "{:.4f}"),
        ("compile with stats / ours", "compile_stats_over_ours", "{:.3f}x"),
        ("ours / copy bw", "ours_of_copy_bw", "{:.2f}"),
        ("check vs float64", "check", None), ("errors", "error_keys", None)], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
