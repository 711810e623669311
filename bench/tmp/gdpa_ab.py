"""Session 28: gdpa_kunlun_h2/h4 timed with the default library and lib<name>_smem.so (do_bench, L2 flushed), interleaved."""
import os, sys, json
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench/layers")
import torch
import attention_programs as ap
import bench_util as bu
progs = ap.programs()
out = {}
for name, batch, lq in [("gdpa_kunlun_h2", 768, 512), ("gdpa_kunlun_h4", 768, 1024)]:
    p = progs[name]
    h, d, dv, kv = p["heads"], p["d"], p["dv"], p["kv"]
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(batch, lq, h, d, generator=g, device="cuda").bfloat16()
    k = (d ** -0.5 * torch.randn(batch, kv, h, d, generator=g, device="cuda")).bfloat16()
    v = torch.randn(batch, kv, h, dv, generator=g, device="cuda").bfloat16()
    meas = []
    outs = {}
    for var in ["", "_smem"]:
        fn = ap.function(p, var)
        o = torch.full((batch, lq, h, dv), float("nan"), dtype=torch.bfloat16, device="cuda")
        fn(q, k, v, o); torch.cuda.synchronize(); outs[var] = o
        meas.append((f"call{var or '_rs'}", bu.bench_ms, lambda fn=fn, o=o: fn(q, k, v, o)))
    diff = (outs[""].float() - outs["_smem"].float()).abs().max().item()
    errors = {}
    mean, spread, _ = bu.run_rounds(2, meas, errors)
    out[name] = dict(mean_ms=mean, max_abs_diff_rs_vs_smem=diff, errors=errors)
    print(name, {k: round(v, 4) for k, v in mean.items()}, "maxdiff", diff, flush=True)
json.dump(out, open(os.environ["OUT"] + "/gdpa_ab.json", "w"), indent=1)
