#!/usr/bin/env python3
"""Summarizes the per-SASS-instruction CSV that bench/ncu_source.sh writes
(`ncu --page source --csv --print-source sass`, gzipped): the stall sites
that take the most warp samples (with their top stall reasons and
execution counts), the stall reasons over the whole kernel, and, with
--ranges A-B ..., the samples, stall mix and instruction mix of those
SASS line ranges (a kernel's K loop, its epilogue: find them from the
sites' execution counts, e.g. tiles x K steps x warps for a K loop).

    python3 bench/ncu_sass_summary.py ncu_CASE_sass.csv.gz [--top 30] [--ranges 640-879 880-2800]
    python3 bench/ncu_sass_summary.py ncu_CASE_sass.csv.gz --blocks 40   # samples per 40 lines
"""
import argparse
import csv
import gzip


def load(path):
    rows = list(csv.reader(gzip.open(path, "rt")))
    header, data = rows[1], rows[2:]
    return {h: i for i, h in enumerate(header)}, data


def opcode(text):
    parts = text.split()
    op = parts[1] if parts and parts[0].startswith("@") else (parts[0] if parts else "")
    return op.split(".")[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--ranges", nargs="*", default=[])
    p.add_argument("--blocks", type=int, default=0,
                   help="also the samples and main opcodes of every N lines")
    a = p.parse_args()
    col, data = load(a.csv)
    samples = col["Warp Stall Sampling (All Samples)"]
    executed = col["Instructions Executed"]
    reasons = [h for h in col if h.startswith("stall_") and "(Not" not in h]
    num = lambda r, c: int(r[c] or 0)  # noqa: E731
    total = sum(num(r, samples) for r in data) or 1
    print(f"{a.csv}: {total} samples over {len(data)} SASS lines")
    for i in sorted(range(len(data)), key=lambda i: -num(data[i], samples))[:a.top]:
        r = data[i]
        top = sorted(((num(r, col[h]), h[6:]) for h in reasons), reverse=True)[:3]
        print(f"{i:6d} {100 * num(r, samples) / total:5.1f}% exec={num(r, executed):>10} "
              f"{r[1].strip()[:58]:58s} {top}")
    mix = {h[6:]: sum(num(r, col[h]) for r in data) for h in reasons}
    print("stall reasons:", sorted(((round(100 * v / total, 1), k) for k, v in mix.items()),
                                   reverse=True)[:10])

    def summary(lo, hi):
        chunk = data[lo:hi + 1]
        s = sum(num(r, samples) for r in chunk)
        stalls = {h[6:]: sum(num(r, col[h]) for r in chunk) for h in reasons}
        ops = {}
        for r in chunk:
            ops[opcode(r[1])] = ops.get(opcode(r[1]), 0) + num(r, executed)
        return s, stalls, ops

    for rng in a.ranges:
        lo, hi = map(int, rng.split("-"))
        s, stalls, ops = summary(lo, hi)
        print(f"lines {rng}: {100 * s / total:.1f}% of samples, "
              f"{sum(ops.values())} warp instructions executed")
        print("   stalls:", sorted(((round(100 * v / max(s, 1)), k) for k, v in stalls.items()),
                                   reverse=True)[:6])
        print("   opcodes:", sorted(ops.items(), key=lambda x: -x[1])[:12])
    if a.blocks:
        for lo in range(0, len(data), a.blocks):
            s, _, ops = summary(lo, lo + a.blocks - 1)
            if s or sum(ops.values()):
                main_ops = sorted(ops.items(), key=lambda x: -x[1])[:5]
                print(f"{lo:6d}-{lo + a.blocks - 1:<6d} {100 * s / total:5.1f}% "
                      f"exec {sum(ops.values()):>10} {main_ops}")


if __name__ == "__main__":
    main()
