#!/usr/bin/env python3
"""A training step of Linear -> RMSNorm (weight) -> Linear, and of Linear ->
LayerNorm (weight, bias) -> Linear, at M = 65536 tokens
(bench/layers/gen_layers.py train_step_rms_h{H}, train_step_ln_h{H}): our one library
call (forward and backward, given dy) against the same nn.Module's forward +
backward in eager mode and under torch.compile, and against the ideal of
its six GEMMs in cuBLAS alone. do_bench medians of the whole step,
interleaved rounds (bench_util.run_rounds), JSON with date, GPU and commit.

    FUSION_GPU_ARTIFACTS=build/gpu python3 bench/bench_train_step.py --out step.json --commit abc1234
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "layers"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runtime", "python"))
HS = (512, 768, 1024, 2048, 4096)
TIMING = ("ours_ms: do_bench median of our library call (y, dx, dW1, dg, dW2 from x, W1, g, W2, "
          "dy; LayerNorm: dgamma, dbeta from gamma, beta); eager_ms / compile_ms: forward + y.backward(dy) of the nn.Module (eager / "
          "torch.compile, fresh); six_gemm_ms: the step's six cuBLAS GEMMs alone; the mean of "
          "interleaved rounds (bench_util.run_rounds)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--m", type=int, default=65536)
    p.add_argument("--norms", default="rms,ln", help="which steps: rms, ln or both")
    p.add_argument("--hs", default=",".join(map(str, HS)), help="hidden sizes, comma-separated")
    p.add_argument("--baselines", default="eager,compile,six_gemm",
                   help="which baselines to time beside ours (comma-separated; torch.compile's "
                        "warm-up dominates a run's time)")
    p.add_argument("--breakdown", action="store_true",
                   help="also record each kernel of our step and of the six cuBLAS GEMMs "
                        "(profiler records: grid, block, registers, median device time), "
                        "to see where the step's time over the ideal goes")
    p.add_argument("--variants", default="",
                   help="NAME=ARTIFACTS,...: the same programs from other artifact folders "
                        "(other compiler options), timed as ours_NAME_ms in the same rounds")
    p.add_argument("--timeline", action="store_true",
                   help="also record one call's kernels with their start, duration and "
                        "stream (a side kernel beside its GEMM shows as an overlap)")
    a = p.parse_args()
    import torch

    import bench_util as bu
    import layers_ref as lr

    art = lr.artifacts_dir()
    programs = lr.load_manifest(art)
    libs = lr.Libraries(art)
    rows = []
    hs = [int(h) for h in a.hs.split(",")]
    variant_libs = [(spec.split("=", 1)[0], lr.Libraries(spec.split("=", 1)[1]))
                    for spec in a.variants.split(",") if spec]
    for _, vlibs in variant_libs:
        vlibs.runtime = libs.runtime  # one runtime in the process

    def variants(prog):
        for vname, vlibs in variant_libs:
            vfn = vlibs.function(prog, "fused")
            if vfn is not None:
                yield vname, vfn
    for norm, h in [(norm, h) for norm in a.norms.split(",") for h in hs]:
        prog = programs.get(f"train_step_{norm}_h{h}")
        if prog is None or libs.function(prog, "fused") is None:
            print(f"train_step_{norm}_h{h}: not built, skipped", flush=True)
            continue
        row = dict(name=prog["name"], norm=norm, h=h, m=a.m, errors={})
        inputs = lr.make_train_case(h, a.m, 11, norm)
        outs = lr.make_outputs(prog, a.m)
        fn = libs.function(prog, "fused")
        x, dy, w1, w2 = inputs["x"], inputs["dy"], inputs["w1"], inputs["w2"]

        def module_step(compiled):
            block = lr.make_train_block(inputs, h, prog["eps"], torch.bfloat16, norm)
            f = bu.compile_fresh(block) if compiled else block
            xg = x.clone().requires_grad_()

            def step():
                y = f(xg)
                y.backward(dy)
            return step

        n = torch.empty_like(x)

        def six_gemms():
            torch.matmul(x, w1.T, out=n)
            torch.matmul(n, w2.T)
            torch.matmul(dy, w2)
            torch.matmul(dy.T, n)
            torch.matmul(n, w1)
            torch.matmul(n.T, x)

        baselines = a.baselines.split(",")
        measurements = [("ours_ms", bu.bench_ms, lambda: fn(*inputs.values(), *outs.values()))]
        for vname, vfn in variants(prog):
            vouts = lr.make_outputs(prog, a.m)
            measurements.append((f"ours_{vname}_ms", bu.bench_ms,
                                 lambda vfn=vfn, vouts=vouts: vfn(*inputs.values(), *vouts.values())))
        if "eager" in baselines:
            measurements.append(("eager_ms", bu.bench_ms, module_step(False)))
        if "compile" in baselines:
            measurements.append(("compile_ms", bu.bench_ms, module_step(True)))
        if "six_gemm" in baselines:
            measurements.append(("six_gemm_ms", bu.bench_ms, six_gemms))
        mean, spread, _ = bu.run_rounds(a.rounds, measurements, row["errors"])
        row.update(mean)
        row["spread"] = spread
        if a.breakdown:
            for key, f in (("ours_kernels", lambda: fn(*inputs.values(), *outs.values())),
                           ("six_gemm_kernels", six_gemms)):
                try:
                    row[key] = bu.kernel_records(f)
                    print(f"{prog['name']} {key}: " + "; ".join(
                        f"{k['name'][:48]} grid={k['grid']} x{k['calls'] // 20} "
                        f"{k['median_us']:.1f} us" for k in row[key]), flush=True)
                except Exception as e:
                    row["errors"][key] = bu.error_text(e)
        if a.timeline:
            try:
                row["ours_timeline"] = bu.kernel_timeline(
                    lambda: fn(*inputs.values(), *outs.values()))
                print(f"{prog['name']} timeline: " + "; ".join(
                    f"{k['name'][-10:]} @{k['start_us']:.0f} +{k['dur_us']:.0f} s{k['stream']}"
                    for k in row["ours_timeline"]), flush=True)
            except Exception as e:
                row["errors"]["ours_timeline"] = bu.error_text(e)
        if "ours_ms" in row:
            for k in ("compile_ms", "six_gemm_ms"):
                if k in row:
                    row[k.replace("_ms", "_over_ours")] = row[k] / row["ours_ms"]
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
               if k not in ("spread", "ours_kernels", "six_gemm_kernels", "ours_timeline")}, flush=True)
    bu.write_json(a.out, a, rows, TIMING, complete=True)
    print(bu.markdown_table([("norm", "norm", "{}"), ("H", "h", "{}"), ("ours ms", "ours_ms", "{:.3f}"),
                             ("eager ms", "eager_ms", "{:.3f}"),
                             ("torch.compile ms", "compile_ms", "{:.3f}"),
                             ("six GEMMs ms", "six_gemm_ms", "{:.3f}"),
                             ("compile / ours", "compile_over_ours", "{:.2f}x"),
                             ("six GEMMs / ours", "six_gemm_over_ours", "{:.2f}")], rows))


if __name__ == "__main__":
    main()
