"""Runs fusion-plan-kernels over a grid of GEMM shapes and epilogues and checks
every configuration it emits against the planning rules, independently of the
C++ (docs/STYLE.md 2.6; rules in Passes.td, FusionPlanKernelsPass).

Usage: plan_kernels_grid.py FUSION_OPT CHIP

Prints one line per shape ("planned ..." or "refused ..."), a line starting
with VIOLATION for each inconsistency, and a summary line.
"""

import re
import subprocess
import sys

MS = [1, 1000, 262144]
KS = [64, 256, 512, 4096]
NS = [8, 200, 256, 264, 512, 576, 1024, 2048, 4096]
EPILOGUES = ["none", "row_scale", "rms_norm", "layer_norm", "rms_norm_grad",
             "layer_norm_grad"]

# What the planner may read from TargetInfo (lib/Target/NVPTX/TargetInfo.cpp).
# max_elementwise_tile_n: the widest tile of a row-independent epilogue (on
# sm_100a two accumulator stages in the 512 tensor-memory columns);
# consumers: the consumer warpgroups (sm_100a: one epilogue warpgroup);
# tmem: tensor-memory columns (an accumulator stage is tile_n of them).
TARGETS = {
    "sm_90a": dict(smem=232448, max_tile_n=256, max_elementwise_tile_n=256,
                   granularity=64, max_cluster=16, max_epilogue_cluster=4,
                   consumers=2, tmem=0),
    "sm_100a": dict(smem=232448, max_tile_n=512, max_elementwise_tile_n=256,
                    granularity=64, max_cluster=16, max_epilogue_cluster=16,
                    consumers=1, tmem=512),
}
ELEMENT_BYTES = 2  # bf16
ROW_REDUCTION = {"rms_norm", "layer_norm", "rms_norm_grad", "layer_norm_grad"}
GRAD = {"rms_norm_grad", "layer_norm_grad"}
# Refusals a well-formed bf16 shape may get: the row does not fit a cluster,
# or the shared memory does not fit.
ALLOWED_REFUSALS = ("expected the CTAs of a row block to cover a row",
                    "expected at most")


def smem(tile_m, tile_n, tile_k, stages, cluster_n, grad, rounds=1, split=False,
         epilogue_warps=False, tmem=False):
    ring = stages * (tile_m * tile_k + tile_n * tile_k) * ELEMENT_BYTES
    # bf16 outputs leave by TMA store through two [tile_m, 64] buffers (one
    # with a cluster; the whole tile when a row's statistics go through
    # global memory, or when a forward norm over several CTAs runs in the
    # epilogue warps: the tile waits there for them; on sm_100a (`tmem`) it
    # waits in tensor memory).
    buffers = (tile_n // 64 if (split and not tmem) or epilogue_warps else
               1 if cluster_n > 1 else 2)
    store_staging = buffers * tile_m * 64 * ELEMENT_BYTES
    # (The sm_100a kernel reads norm_input from global memory: no tile; so
    # do sm_90a's grad epilogue warps, which keep [4][tile_m] f32 row
    # scalars instead.)
    norm_input = (tile_m * tile_n * ELEMENT_BYTES
                  if grad and not tmem and not epilogue_warps else 0)
    grad_rows = 4 * tile_m * 4 if grad and epilogue_warps else 0
    # DSMEM slots: exchange rounds (LayerNorm 2) x tile parity x peers; with
    # the global-memory exchange, the rows' scale and shift (mean and rstd
    # without epilogue warps; none on sm_100a).
    slots = ((0 if tmem else 2 * tile_m * 4) if split else
             rounds * 2 * tile_m * cluster_n * 4 if cluster_n > 1 else 0)
    return ring + store_staging + tile_m * 4 + norm_input + grad_rows + slots + 1024


def round_up(x, multiple):
    return -(-x // multiple) * multiple


def name(m, k, n, epi):
    return f"g_{m}_{k}_{n}_{epi}"


def function(chip, m, k, n, epi):
    t = lambda *shape: "tensor<" + "x".join(map(str, shape)) + ">"
    a, b, out = t(m, k, "bf16"), t(k, n, "bf16"), t(m, n, "bf16")
    rows = t(m, "f32")
    args = [f"%a: {a}", f"%b: {b}"]
    operands, attrs = "", [f"epilogue = #fusion.epilogue<{epi}>"]
    if epi == "row_scale":
        args.append(f"%s: {rows}")
        operands = f" row_scale(%s : {rows})"
    if epi in ("rms_norm", "layer_norm"):
        attrs.append("epsilon = 1.0e-05 : f32")
    if epi in GRAD:
        args += [f"%x: {out}", f"%m: {rows}", f"%r: {rows}"]
        operands = f" norm_input(%x : {out})"
        if epi == "layer_norm_grad":
            operands += f" mean(%m : {rows})"
        operands += f" rstd(%r : {rows})"
    loc = name(m, k, n, epi)
    return (
        f'module attributes {{fusion.target = #fusion.target<"{chip}">}} {{\n'
        f"func.func @{loc}({', '.join(args)}) -> {out} {{\n"
        f"  %y = fusion.fused_matmul %a, %b{operands} {{{', '.join(attrs)}}}"
        f' : {a}, {b} -> {out} loc("{loc}")\n'
        f"  return %y : {out}\n}}\n}}\n")


def main():
    fusion_opt, chip = sys.argv[1], sys.argv[2]
    target = TARGETS[chip]
    grid = [(m, k, n, e) for m in MS for k in KS for n in NS for e in EPILOGUES]
    source = "// -----\n".join(function(chip, *g) for g in grid)
    run = subprocess.run([fusion_opt, "-split-input-file", "-fusion-plan-kernels=small-m=false",
                          "-mlir-print-local-scope", "-"],
                         input=source, capture_output=True, text=True)

    configs = {}
    current = None
    for line in run.stdout.splitlines():
        if match := re.search(r"func\.func @(g_\w+)\(", line):
            current = match.group(1)
        if match := re.search(r"#fusion\.kernel_config<([^>]*)>", line):
            fields = dict(kv.split(" = ") for kv in match.group(1).split(", "))
            configs[current] = {key: (v == "true") if v in ("true", "false") else int(v)
                                for key, v in fields.items()}
    refusals = {}
    for line in run.stderr.splitlines():
        # "<unknown>:0: error: loc("g_..."): 'fusion.fused_matmul' op ..."
        if match := re.search(r'error: loc\("(g_\w+)"\): (.*)', line):
            refusals[match.group(1)] = match.group(2)

    violations = 0

    def violation(what):
        nonlocal violations
        violations += 1
        print("VIOLATION", what)

    for m, k, n, epi in grid:
        key = name(m, k, n, epi)
        if key in refusals:
            message = refusals[key]
            print(f"refused {key}: {message}")
            text = message.split(" op ", 1)[-1]
            if not text.startswith(ALLOWED_REFUSALS):
                violation(f"{key}: unexpected refusal: {message}")
            continue
        if key not in configs:
            violation(f"{key}: neither planned nor refused")
            continue
        c = configs[key]
        print(f"planned {key}: " + ", ".join(f"{f} = {v}" for f, v in c.items()))
        tm, tn, tk = c["tile_m"], c["tile_n"], c["tile_k"]
        stages, cn, total = c["stages"], c["cluster_n"], c["smem_bytes"]
        grad = epi in GRAD
        rounds = 2 if epi in ("layer_norm", "layer_norm_grad") else 1
        split = epi in ROW_REDUCTION and cn == 1 and tn < n
        ew = (chip == "sm_90a" and epi in ("rms_norm", "layer_norm") and
              (cn > 1 or split))
        # sm_90a's grad epilogues (bf16 dx) run in the epilogue warps over
        # one CTA or a cluster.
        ew = ew or (chip == "sm_90a" and grad and not split)
        # The strategy the planner records for the generator (printed only
        # when set).
        if c.get("global_rows", False) != split:
            violation(f"{key}: global_rows = {c.get('global_rows', False)}, the rule gives {split}")
        if c.get("epilogue_warps", False) != ew:
            violation(f"{key}: epilogue_warps = {c.get('epilogue_warps', False)}, the rule gives {ew}")
        if total > target["smem"]:
            violation(f"{key}: smem_bytes = {total} > {target['smem']}")
        tmem = target["tmem"] > 0
        if total != smem(tm, tn, tk, stages, cn, grad, rounds, split, ew, tmem):
            violation(f"{key}: smem_bytes = {total}, the formula gives "
                      f"{smem(tm, tn, tk, stages, cn, grad, rounds, split, ew, tmem)}")
        if (tm, tk, c["consumers"]) != (128, 64, target["consumers"]):
            violation(f"{key}: expected tile_m 128, tile_k 64, "
                      f"{target['consumers']} consumers")
        if target["tmem"] and tn > target["tmem"]:
            violation(f"{key}: tile_n = {tn}: an accumulator stage exceeds "
                      f"{target['tmem']} tensor-memory columns")
        if not 2 <= stages <= 6:
            violation(f"{key}: stages = {stages} outside [2, 6]")
        if stages < 6 and smem(tm, tn, tk, stages + 1, cn, grad, rounds, split, ew, tmem) <= target["smem"]:
            violation(f"{key}: {stages + 1} stages would fit too")
        # Row-independent epilogues take the widest tile the target allows
        # (halved only when even 2 stages do not fit).
        g = target["granularity"]
        widest = min(target["max_elementwise_tile_n"], round_up(n, g))
        if epi not in ROW_REDUCTION and tn < widest \
                and smem(tm, widest, tk, 2, 1, grad, tmem=tmem) <= target["smem"]:
            violation(f"{key}: tile_n = {tn} but a wider tile fits")
        if tn % g or tn > target["max_tile_n"]:
            violation(f"{key}: tile_n = {tn}")
        if not 1 <= cn <= target["max_cluster"]:
            violation(f"{key}: cluster_n = {cn}")
        if epi in ROW_REDUCTION:
            # The power-of-two cluster that holds the row, slices of
            # ceil(N / C) rounded up to the granularity, then no CTA without
            # a column: covered, and the last CTA holds at least one column.
            # Rows of more than max_epilogue_cluster CTAs (bf16 outputs here):
            # through global memory, tiles of max_tile_n columns, no cluster.
            needed = -(-n // target["max_tile_n"])
            if needed > target["max_epilogue_cluster"]:
                if (tn, cn) != (target["max_tile_n"], 1):
                    violation(f"{key}: tile_n = {tn}, cluster_n = {cn}; the rule gives "
                              f"{target['max_tile_n']}, 1 (global memory)")
                continue
            pow2 = 1
            while pow2 * target["max_tile_n"] < n:
                pow2 *= 2
            expected_tn = round_up(-(-n // pow2), g)
            if (tn, cn) != (expected_tn, -(-n // expected_tn)):
                violation(f"{key}: tile_n = {tn}, cluster_n = {cn}; the rule gives "
                          f"{expected_tn}, {-(-n // expected_tn)}")
            if tn * cn < n or (cn - 1) * tn >= n:
                violation(f"{key}: the cluster covers {tn} x {cn} columns of a "
                          f"row of {n}")
        elif cn != 1 or tn > round_up(n, g):
            violation(f"{key}: tile_n = {tn}, cluster_n = {cn} for N = {n}")

    if len(configs) + len(refusals) != len(grid):
        violation(f"{len(configs)} planned + {len(refusals)} refused != "
                  f"{len(grid)} shapes")
    print(f"{chip}: {len(grid)} shapes, {len(configs)} planned, "
          f"{len(refusals)} refused, {violations} violations")


if __name__ == "__main__":
    main()
