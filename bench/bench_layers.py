#!/usr/bin/env python3
"""Issue 14's layers as users write them (bench/layers/gen_layers.py), at
M = 65536 tokens and H = 768, 1024, 2048, 4096, per docs/PERF.md: ours fused
(fusion-compile's default pipeline) and unfused (--no-fuse), each as the time
the user sees (do_bench over the loader call, asynchronous on torch's
current stream) and as its kernels' own time (profiler); against the same
nn.Module in PyTorch eager and under torch.compile (compiled fresh and
static per case), and cuBLAS's F.linear(x, W) alone (the GEMM the layer
cannot beat by much). Every time is the mean of --rounds interleaved rounds;
every output of ours is checked against float64 in the same run. Writes JSON
(rewritten after every case) and prints a markdown table. A library that was
not built, or a measurement that fails, is reported and skipped.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/bench_layers.py --artifacts build/gpu \\
        --out bench_layers.json --commit abc1234 [--only REGEX] [--kinds all] [--rounds 2]

About 3 minutes on an H200 for the 12 default cases (torch.compile's
compilations are most of it).
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "layers"))

DEFAULT_KINDS = ("llama_prenorm", "bert_postnorm", "bert_postnorm_addbias", "qwen3_q_norm")
ALL_KINDS = DEFAULT_KINDS + ("llama_prenorm_mulweight", "ln_prenorm", "llama_o_proj",
                             "gpt2_c_proj", "neox_parallel", "olmo2_post", "llama_mlp",
                             "gpt2_mlp", "llama_q_rope", "neox_q_rope", "gptj_q_rope")
# Libraries per program: fusion-compile's default, --no-fuse, and (ln_prenorm)
# --lazy-layer-norm; a variant not built for a program is skipped.
VARIANTS = ("fused", "unfused", "lazyln")
HS = (768, 1024, 2048, 4096)
TIMING = ("fused_call_ms / unfused_call_ms: do_bench median (warmup 25 ms, rep 200 ms, L2 "
          "flushed) of the loader call, asynchronous on the current stream; fused_kernel_ms / "
          "unfused_kernel_ms: our kernels' device time per call from profiler records "
          "(bench_fused_matmul.kernel_ms); eager_ms, compile_ms, cublas_linear_ms: do_bench "
          "medians of the nn.Module in eager, under torch.compile compiled fresh and static "
          "for the case, and of F.linear(x, W) alone (neox_parallel: its two F.linear, no bias; the "
          "MLPs: their GEMMs, F.linear without bias); each the mean of the interleaved rounds "
          "(listed in rounds, each with its order: the first round in the listed order, the others "
          "shuffled, each measurement after 300 ms of its own function, untimed, so that the "
          "card's power-capped clocks settle on it (bench_util.run_rounds); spread_ms = max - min)")


def bench_case(prog, libs, a, lr, bu):
    import torch
    import torch.nn.functional as F
    m = a.m
    row = dict(name=prog["name"], kind=prog["kind"], h=prog["h"], m=m, errors={})
    errors = row["errors"]
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(0))
    ref64 = lr.reference(prog, x, torch.float64)
    ref16 = lr.reference(prog, x, torch.bfloat16)
    row["torch_bf16_rel_err"] = lr.rel_error(ref16["y"], ref64["y"])
    measurements = []
    for variant in VARIANTS:
        try:
            fn = libs.function(prog, variant)
            if fn is None:
                row[f"{variant}_status"] = "not built"
                continue
            y = lr.make_outputs(prog, m)
            call = lambda fn=fn, y=y: fn(*x.values(), *y.values())
            call()
            torch.cuda.synchronize()
            check = lr.check(prog, x, y, ref64, ref16)
        except Exception as e:
            errors[variant] = bu.error_text(e)
            continue
        row[f"{variant}_rel_err"], row[f"{variant}_ok"] = check["rel_err"], check["ok"]
        if not check["ok"]:
            row[f"{variant}_why"] = check["why"]
        measurements += [(f"{variant}_call", bu.bench_ms, call),
                         (f"{variant}_kernel", bu.kernel_ms, call)]
    module, args = lr.build_module(prog, x)
    measurements.append(("eager", bu.bench_ms, lambda: module(*args)))
    try:
        compiled = bu.compile_fresh(module)
        out = compiled(*args)
        torch.cuda.synchronize()
        row["compile_rel_err"] = lr.rel_error(out, ref64["y"])
        measurements.append(("compile", bu.bench_ms, lambda: compiled(*args)))
    except Exception as e:
        errors["compile"] = bu.error_text(e)
    del ref64, ref16
    if "w" in x:
        xx, w = x["x"], x["w"]
        linear = lambda: F.linear(xx, w)
    elif "wg" in x:  # llama_mlp: its three GEMMs alone (the product's input given)
        xx, wg, wu, wd = x["x"], x["wg"], x["wu"], x["wd"]
        p = torch.empty(xx.shape[0], wg.shape[0], dtype=xx.dtype, device=xx.device).normal_()
        linear = lambda: (F.linear(xx, wg), F.linear(xx, wu), F.linear(p, wd))
    elif "w1" in x:  # gpt2_mlp: its two GEMMs alone
        xx, w1, w2 = x["x"], x["w1"], x["w2"]
        p = torch.empty(xx.shape[0], w1.shape[0], dtype=xx.dtype, device=xx.device).normal_()
        linear = lambda: (F.linear(xx, w1), F.linear(p, w2))
    else:  # neox_parallel: its two projections (no bias)
        xa, wa, xm, wm = x["a"], x["wa"], x["m"], x["wm"]
        linear = lambda: (F.linear(xa, wa), F.linear(xm, wm))
    measurements.append(("cublas_linear", bu.bench_ms, linear))
    mean, spread, rounds = bu.run_rounds(a.rounds, measurements, errors)
    row.update({f"{k}_ms": v for k, v in mean.items()})
    row["spread_ms"], row["rounds"] = spread, rounds
    ours = mean.get("fused_call")
    if ours:
        for base in ("compile", "eager", "unfused_call"):
            if base in mean:
                row[f"{base}_over_fused"] = mean[base] / ours
    if "lazyln_call" in mean:
        for base in ("compile", "fused_call"):
            if base in mean:
                row[f"{base}_over_lazyln"] = mean[base] / mean["lazyln_call"]
        if "cublas_linear" in mean:
            row["fused_over_cublas"] = ours / mean["cublas_linear"]
    if "compile" in mean and "unfused_call" in mean:
        row["compile_over_unfused"] = mean["compile"] / mean["unfused_call"]
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--artifacts", default=os.environ.get("FUSION_GPU_ARTIFACTS",
                                                         os.path.join(os.path.dirname(HERE),
                                                                      "build", "gpu")))
    p.add_argument("--out", default="bench_layers.json")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--only", default="", help="only the programs whose name matches this regex")
    p.add_argument("--kinds", default=",".join(DEFAULT_KINDS),
                   help=f"comma-separated, or 'all' ({', '.join(ALL_KINDS)})")
    p.add_argument("--m", type=int, default=65536, help="tokens (rows)")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds (>= 2)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the cases and the libraries found, time nothing")
    a = p.parse_args()
    if a.rounds < 2:
        p.error(f"--rounds: expected at least 2 (the spread needs two), but got {a.rounds}")
    kinds = ALL_KINDS if a.kinds == "all" else tuple(a.kinds.split(","))
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown:
        p.error(f"--kinds: unknown {', '.join(sorted(unknown))}; expected some of {', '.join(ALL_KINDS)}")
    import layers_manifest
    programs = layers_manifest.load_manifest(a.artifacts)
    if programs is None:
        print(f"bench_layers: {a.artifacts}/layers/layers.json not found: run "
              f"bench/build_gpu_artifacts.sh; nothing to time")
        return 0
    names = [f"{k}_h{h}" for k in kinds for h in HS]
    names = [n for n in names if n in programs and re.search(a.only, n)]
    if a.dry_run:
        for n in names:
            found = [v for v in VARIANTS
                     if os.path.exists(layers_manifest.library_path(a.artifacts, n, v))]
            print(f"{n}: M={a.m}, libraries: {', '.join(found) or 'none'}")
        return 0
    import torch
    import bench_util as bu
    if not torch.cuda.is_available():
        print("bench_layers: no CUDA GPU; nothing to time")
        return 0
    import layers_ref as lr
    libs = lr.Libraries(a.artifacts)
    rows = []
    for i, name in enumerate(names):
        try:
            with torch.no_grad():
                row = bench_case(programs[name], libs, a, lr, bu)
        except Exception as e:
            row = dict(name=name, errors={"case": bu.error_text(e)})
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
        bu.write_json(a.out, a, rows, TIMING, complete=i == len(names) - 1)
        torch.cuda.empty_cache()
    if not rows:
        bu.write_json(a.out, a, rows, TIMING, complete=True)
    for r in rows:
        r["check"] = " ".join(
            f"{v}:{'ok' if r[v + '_ok'] else 'FAIL'}" if v + "_ok" in r else
            f"{v}:{r.get(v + '_status', 'error')}" for v in VARIANTS
            if v + "_ok" in r or v != "lazyln")
        r["error_keys"] = ",".join(r.get("errors", {})) or None
    print()
    print(bu.markdown_table([
        ("layer", "name", None), ("fused call ms", "fused_call_ms", "{:.3f}"),
        ("fused kernels ms", "fused_kernel_ms", "{:.3f}"),
        ("unfused call ms", "unfused_call_ms", "{:.3f}"), ("eager ms", "eager_ms", "{:.3f}"),
        ("torch.compile ms", "compile_ms", "{:.3f}"),
        ("cuBLAS linear ms", "cublas_linear_ms", "{:.3f}"),
        ("compile / fused", "compile_over_fused", "{:.2f}x"),
        ("lazyln call ms", "lazyln_call_ms", "{:.3f}"),
        ("compile / lazyln", "compile_over_lazyln", "{:.2f}x"),
        ("fused / cuBLAS", "fused_over_cublas", "{:.2f}"),
        ("check vs float64", "check", None), ("errors", "error_keys", None)], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
