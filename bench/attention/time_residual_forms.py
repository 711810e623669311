#!/usr/bin/env python3
"""Kernel time of gdpa at Kunlun's shape (B 768, L_q 512, H 2, D 128, L_kv 128): no residual,
the query as residual, a residual of its own: kernel time (profiler), 3 rounds."""
import json, sys, os
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench"); sys.path.insert(0, "bench/layers")
import torch
import attention_programs as ap
import bench_util as bu
progs = ap.programs()
B, LQ = 768, 512
meas = []
keep = []
for name in ("gdpa_kunlun_h2", "gdpa_residual_q_kunlun", "gdpa_residual_kunlun"):
    prog = progs[name]; fn = ap.function(prog, "")
    h, d, dv, kv = prog["heads"], prog["d"], prog["dv"], prog["kv"]
    dt = torch.bfloat16
    q = torch.randn(B, LQ, h, d, device="cuda").to(dt)
    k = torch.randn(B, kv, h, d, device="cuda").to(dt); v = torch.randn(B, kv, h, dv, device="cuda").to(dt)
    out = torch.empty(B, LQ, h, dv, dtype=dt, device="cuda")
    own = [torch.randn_like(out)] if prog.get("residual") == "own" else []
    keep.append((q, k, v, out, own))
    call = (lambda fn=fn, q=q, k=k, v=v, own=own, out=out: fn(q, k, v, *own, out))
    meas.append((name, bu.kernel_ms, call))
errors = {}
mean, spread, rounds = bu.run_rounds(3, meas, errors)
print(json.dumps(dict(mean_ms=mean, spread_ms=spread, errors=errors), indent=1))
