"""Timing and reporting shared by bench/bench_layers.py and bench/bench_norms.py
(docs/PERF.md's protocol): do_bench medians with triton's L2 flush, our
kernels' own time from the profiler (bench_fused_matmul.kernel_ms), a
torch.compile baseline compiled fresh and static per case, interleaved
rounds, per-measurement errors recorded instead of raised, and a JSON file
rewritten after every case (a run cut short keeps what it measured)."""
import datetime
import json
import os
import random
import statistics
import sys
import tempfile
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, HERE)

try:
    from bench_fused_matmul import kernel_ms as _kernel_ms
    KERNEL_MS_ERROR = None
except Exception as e:  # the call time is still measured
    _kernel_ms, KERNEL_MS_ERROR = None, f"{type(e).__name__}: {e}"


def bench_ms(fn):
    """CUDA-event median of fn, L2 flushed before each call (do_bench's default)."""
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def kernel_ms(fn, match="_kernel"):
    """Our kernels' device time per call (profiler records; `match`: a
    substring of the kernels' names, "triton" for torch.compile's), or an
    error."""
    if _kernel_ms is None:
        raise RuntimeError(f"no kernel_ms: importing bench_fused_matmul failed: {KERNEL_MS_ERROR}")
    return _kernel_ms(fn, match=match)[0]


def _kernel_events(fn, calls, synchronize_each=False):
    """The profiler's kernel events of `calls` calls of fn (after one
    unprofiled call), in the order the trace lists them."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
            if synchronize_each:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    os.unlink(path)
    return [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"]


def kernel_records(fn, calls=20):
    """The kernel records of `calls` calls of fn: name, grid, block,
    registers, shared memory, median duration (us)."""
    kernels = {}
    for e in _kernel_events(fn, calls):
        args = e.get("args", {})
        k = kernels.setdefault(e["name"], dict(
            name=e["name"], grid=args.get("grid"), block=args.get("block"),
            registers=args.get("registers per thread"),
            shared_memory=args.get("shared memory"),
            blocks_per_sm=args.get("blocks per SM"),
            warps_per_sm=args.get("warps per SM"),
            occupancy=args.get("est. achieved occupancy %"), durations=[]))
        k["durations"].append(e.get("dur", 0.0))
    for k in kernels.values():
        d = sorted(k.pop("durations"))
        k["calls"], k["median_us"] = len(d), d[len(d) // 2]
    return list(kernels.values())


def kernel_timeline(fn, calls=5):
    """The kernels of the last of `calls` calls of fn, in start order: name,
    start (us, from the call's first kernel), duration (us), and the stream.
    Kernels on two streams that overlap show which ran beside which."""
    events = sorted(_kernel_events(fn, calls, synchronize_each=True), key=lambda e: e["ts"])
    if not events:
        return []
    per_call = len(events) // calls
    last = events[-per_call:] if per_call else events
    t0 = last[0]["ts"]
    return [dict(name=e["name"], start_us=round(e["ts"] - t0, 1), dur_us=round(e.get("dur", 0.0), 1),
                 stream=e.get("args", {}).get("stream")) for e in last]


def compile_fresh(fn):
    """torch.compile specialized to this case (bench_fused_matmul.compile_fresh:
    without the reset, later cases recompile dynamic or fall back to eager)."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def error_text(e):
    return f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"[:400]


def measure(into, errors, key, how, fn):
    """into[key] = how(fn), or errors[key] = the exception's message."""
    try:
        into[key] = how(fn)
    except Exception as e:
        errors[key] = error_text(e)
        traceback.print_exc(limit=2)


SETTLE_MS = 300.0


def settle(fn, ms=SETTLE_MS):
    """Runs fn back to back for `ms` (synchronized), untimed: under the card's
    power cap its clocks follow what ran before, and take a while to do so."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        fn()
        torch.cuda.synchronize()


def run_rounds(rounds, measurements, errors, settle_ms=SETTLE_MS):
    """measurements: [(key, how, fn)], timed interleaved, each round in its own
    order (a permutation seeded by the round), each measurement after
    `settle_ms` of its own function. Why: the H200 runs the large GEMMs at its
    power cap, and its clocks lag behind the load: a measurement right after
    cuBLAS's 4096 GEMM ran 7-13% slower than the same one after anything
    else (bench/results/HISTORY.md), and a fixed order gave every round's
    measurement the same predecessor. Returns ({key: mean ms}, {key: max -
    min}, the rounds, each with its "order")."""
    all_rounds = []
    for i in range(rounds):
        r = {}
        order = list(measurements)
        if i:
            random.Random(i).shuffle(order)
        for key, how, fn in order:
            if key not in errors:
                try:
                    settle(fn, settle_ms)
                except Exception:
                    pass  # measure() reports the failure
                measure(r, errors, key, how, fn)
        all_rounds.append((r, [k for k, _, _ in order]))
    keys = [k for k, _, _ in measurements if all(k in r for r, _ in all_rounds)]
    mean = {k: statistics.fmean(r[k] for r, _ in all_rounds) for k in keys}
    spread = {k: max(r[k] for r, _ in all_rounds) - min(r[k] for r, _ in all_rounds) for k in keys}
    return mean, spread, [dict(r, order=o) for r, o in all_rounds]


def write_json(path, args, rows, timing, complete):
    import triton
    result = dict(date=datetime.date.today().isoformat(), commit=args.commit,
                  gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                  triton=triton.__version__, complete=complete, timing=timing,
                  kernel_ms_error=KERNEL_MS_ERROR, rows=rows)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def markdown_table(columns, rows):
    """columns: [(header, key, format)]; a missing value prints as '-'."""
    def cell(row, key, fmt):
        v = row.get(key)
        return "-" if v is None else (fmt.format(v) if fmt else str(v))
    lines = ["| " + " | ".join(h for h, _, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r, k, f) for _, k, f in columns) + " |" for r in rows]
    return "\n".join(lines)
