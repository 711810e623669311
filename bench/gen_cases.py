#!/usr/bin/env python3
"""Writes fused-matmul test/benchmark cases as one .mlir module plus a JSON
manifest that test/gpu/test_fused_matmul_gpu.py and bench/bench_fused_matmul.py
read. Each case is one function; fusion-compile turns the module into one
shared library.

    bench/gen_cases.py OUTDIR [--suite correctness|bench]
"""
import argparse
import json
import os

DT = {"bf16": "bf16", "f32": "f32"}


def case(name, m, k, n, prologue="none", epilogue="none", residual=False,
         row_scale=False, col_bias=False, weight=False, bias=False,
         save_stats=False, out=None, dtype="bf16", transpose_rhs=False,
         a_offset=0.0, group=0):
    """`dtype`: the 16-bit type of A, B and the other 16-bit operands;
    `out`: the output type (default `dtype`, or f32); `transpose_rhs`: B is
    [N, K] (nn.Linear's weight layout); `a_offset`: added to A's normal
    values (rows whose mean is far from 0, where the LayerNorm prologue's
    r (A B - m colsum(B)) cancels); `group`: the norm epilogue over each
    group of that many columns (norm_group_size, a per-head norm: weight
    and bias [group], statistics [M, N / group])."""
    return dict(name=name, m=m, k=k, n=n, prologue=prologue, epilogue=epilogue,
                residual=residual, row_scale=row_scale, col_bias=col_bias,
                weight=weight, bias=bias, save_stats=save_stats,
                out=out or dtype, dtype=dtype, eps=1e-5, prologue_eps=1e-6,
                transpose_rhs=transpose_rhs, a_offset=a_offset, group=group)


def suites():
    correctness = [
        case("gemm_256x512x256", 256, 512, 256),
        case("gemm_odd_m", 1000, 512, 256),
        case("gemm_k_tail", 384, 200, 256),
        case("gemm_n128_f32out", 512, 256, 128, out="f32"),
        case("gemm_seed_8192x512x512", 8192, 512, 512),
        case("lazy_rms_8192x512x512", 8192, 512, 512, prologue="rms_norm"),
        case("lazy_rms_odd_m", 1000, 1024, 256, prologue="rms_norm"),
        case("lazy_rms_65536x1024x256", 65536, 1024, 256, prologue="rms_norm"),
        case("rms_epi_8192x512x256", 8192, 512, 256, epilogue="rms_norm",
             residual=True, weight=True, save_stats=True),
        case("ln_epi_8192x512x256", 8192, 512, 256, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True),
        case("ln_epi_odd_m", 1000, 256, 192, epilogue="layer_norm",
             save_stats=True),
        case("rowscale_colbias", 1024, 256, 512, epilogue="row_scale",
             row_scale=True, col_bias=True),
        # Persistent scheduling: more tiles than SMs, a partial last column
        # block, and K loops shorter than the ring (the slot phase flips
        # inside a tile and across tiles).
        case("rowscale_colbias_residual_n264", 1000, 256, 264,
             epilogue="row_scale", row_scale=True, col_bias=True,
             residual=True),
        case("gemm_k64_many_tiles", 65536, 64, 512),
        case("lazy_rms_k64_many_tiles", 20000, 64, 256, prologue="rms_norm"),
        case("ln_epi_65536x256x256", 65536, 256, 256, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True),
        case("rms_epi_odd_m_f32out", 33333, 512, 128, epilogue="rms_norm",
             weight=True, save_stats=True, out="f32"),
        # Multi-CTA (cluster) norm epilogues at each cluster size: the row is
        # split over C CTAs that exchange partial sums through DSMEM.
        case("rms_epi_cluster2_n512", 1000, 512, 512, epilogue="rms_norm",
             residual=True, weight=True, save_stats=True),
        # 71 row blocks: more than the co-resident clusters of 4, so each
        # persistent cluster takes several (both slot parities).
        case("ln_epi_cluster4_n1024", 9001, 256, 1024, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True),
        # Rows wider than 4 CTAs (N > 1024, 16-bit outputs): each tile
        # publishes its rows' partial statistics in global memory and waits
        # in shared memory until its row block's are complete (the epilogue
        # warps normalize and store it while the consumers run the next
        # tile). Many row blocks per CTA, a partial last tile, Lazy
        # Pre-Norm, 16 CTAs per row, a single row block (grid = tiles_n).
        case("ln_epi_split_n1536", 2000, 256, 1536, epilogue="layer_norm",
             weight=True, bias=True, save_stats=True),
        case("rms_epi_split_n2048_many_rows", 65536, 256, 2048,
             epilogue="rms_norm", weight=True, save_stats=True),
        case("ln_epi_split_n4096", 4099, 128, 4096, epilogue="layer_norm",
             weight=True, bias=True, save_stats=True),
        case("ln_epi_split_n4096_many_rows", 65536, 512, 4096, epilogue="layer_norm",
             residual=True, save_stats=True),
        case("rms_epi_split_n4096_one_row_block", 77, 64, 4096, epilogue="rms_norm",
             residual=True, weight=True, save_stats=True),
        # f32 outputs over more than 4 CTAs keep the cluster (16 and 16 CTAs).
        case("rms_epi_cluster16_n4096_f32out", 777, 256, 4096,
             epilogue="rms_norm", save_stats=True, out="f32"),
        case("ln_epi_cluster16_n3000_f32out", 1000, 512, 3000, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True, out="f32"),
        case("rms_epi_split_n2048_nk", 3000, 256, 2048, epilogue="rms_norm",
             weight=True, save_stats=True, transpose_rhs=True),
        case("lazy_rms_ln_split_n2048", 3000, 512, 2048, prologue="rms_norm",
             epilogue="layer_norm", weight=True, bias=True, save_stats=True),
        # Rows that do not fill whole 64-column tiles: tile_n is rounded up
        # to 64 and the columns past N are zero-filled, masked out of the
        # LayerNorm variance and never stored. One CTA (N = 96, 200), a pair
        # whose second CTA holds 72 or 128 columns, 3 CTAs (a cluster that
        # is not a power of two), and through global memory with a last
        # tile of 256 (2560) or 184 (3000) columns.
        case("gemm_n96", 1000, 256, 96),
        case("lazy_rms_n200", 1000, 512, 200, prologue="rms_norm"),
        case("ln_epi_n96", 777, 128, 96, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True),
        case("rms_epi_n200", 1000, 256, 200, epilogue="rms_norm",
             residual=True, weight=True, save_stats=True),
        case("ln_epi_cluster2_n264", 3001, 256, 264, epilogue="layer_norm",
             weight=True, bias=True, save_stats=True),
        # The residual through the staging buffers, the second CTA's boxes
        # partly (256..319) and wholly (320..383) past N = 264.
        case("rms_epi_cluster2_n264_residual", 1001, 256, 264, epilogue="rms_norm",
             residual=True, save_stats=True),
        case("rms_epi_cluster2_n320_f32out", 999, 512, 320, epilogue="rms_norm",
             save_stats=True, out="f32"),
        case("ln_epi_cluster3_n576", 9001, 256, 576, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True),
        case("ln_epi_split_n2560", 2000, 128, 2560, epilogue="layer_norm",
             weight=True, bias=True, save_stats=True),
        case("rms_epi_split_n3000", 1500, 256, 3000, epilogue="rms_norm",
             residual=True, weight=True, save_stats=True),
        # A transposed B (transpose_rhs, B [N, K]: K-major wgmma operands):
        # a K tail, a partial column block, Lazy with a cluster epilogue, f16.
        case("gemm_nk_odd", 1000, 200, 264, transpose_rhs=True),
        case("lazy_rms_nk_8192x512x512", 8192, 512, 512, prologue="rms_norm",
             transpose_rhs=True),
        case("lazy_rms_ln_cluster4_nk", 5000, 512, 1024, prologue="rms_norm",
             epilogue="layer_norm", residual=True, weight=True, bias=True,
             save_stats=True, transpose_rhs=True),
        case("rms_epi_n200_nk_f32out", 999, 256, 200, epilogue="rms_norm",
             weight=True, save_stats=True, out="f32", transpose_rhs=True),
        case("f16_gemm_nk", 1000, 512, 256, dtype="f16", transpose_rhs=True),
        # f16 operands (the f16 wgmma; Lazy converts with extf).
        case("f16_gemm_odd_m", 1000, 512, 256, dtype="f16"),
        # Shapes for stream-K (tiles not a multiple of the H200's 132 SMs;
        # opt-in: compiled with fusion-compile --stream-k, session 27 ran
        # them so): every tile spread (160 tiles: no whole wave, a K tail),
        # whole waves then a spread one with an epilogue after the next
        # CTA's sums (471 tiles, a partial column block), transposed f16, an
        # f32 output. By default they run as whole tiles.
        case("sk_gemm_cut_tiles", 5000, 1000, 1000),
        case("sk_rowscale_colbias_residual", 20000, 704, 520,
             epilogue="row_scale", row_scale=True, col_bias=True, residual=True),
        case("sk_f16_nk", 9000, 296, 1000, dtype="f16", transpose_rhs=True),
        case("sk_f32out", 9000, 504, 384, out="f32"),
        case("f16_lazy_rms_ln_cluster4", 3000, 512, 1024, prologue="rms_norm",
             epilogue="layer_norm", weight=True, bias=True, save_stats=True,
             dtype="f16"),
    ]
    # The reference implementation's Lazy Pre-Norm test shapes (docs/SEED.md
    # section 6.8), and an output larger than 2^31 bytes.
    for m in (65536, 131072, 524288):
        for k in (256, 512, 1024):
            for n in (256, 512, 1024):
                correctness.append(case(f"seed_lazy_{m}x{k}x{n}", m, k, n, prologue="rms_norm"))
    # Every ring depth the sm_90a planner chooses for Lazy Pre-Norm (tile_n
    # 256: 4 stages, 192: 5, 128 and 64: 6), on every row of large inputs.
    for n in (192, 128, 64):
        correctness.append(case(f"lazy_depth_131072x1024x{n}", 131072, 1024, n,
                                prologue="rms_norm"))
    correctness.append(case("gemm_output_over_2GiB", 1100000, 64, 1024))
    # A cluster of 3 x 256 columns (N in 577..768: BERT-base's 768), the
    # third CTA's columns partly past N. Appended last: a kernel's PTX labels
    # carry its position in the module (ptx-golden-sm90a.mlir).
    correctness.append(case("rms_epi_cluster3_n640_residual", 4099, 256, 640,
                            epilogue="rms_norm", residual=True, weight=True,
                            save_stats=True))
    # Lazy Pre-Norm with its row statistics from a stats-only rms_norm kernel
    # and the GEMM's row_scale (fusion-plan-kernels lazy-row-stats: 12 or
    # more column tiles), with bias and residual, and K-major B. Appended last
    # (PTX labels carry module position).
    correctness.append(case("lazy_rms_stats_kernel_n3072_odd_m", 1001, 520, 3072,
                            prologue="rms_norm", residual=True, col_bias=True))
    correctness.append(case("lazy_rms_stats_kernel_nk_n4096", 4097, 256, 4096,
                            prologue="rms_norm", transpose_rhs=True))
    # The LayerNorm prologue (Lazy Pre-Norm of a LayerNorm: the kernel sums
    # A's rows and squares, fusion-plan-kernels adds B's column sums as a
    # 1-row GEMM of ones launched first): odd M, a partial column tile,
    # nn.Linear's B with its bias, rows with a large mean (the deferred
    # centering cancels: a CPU simulation of the f32 arithmetic stays within
    # the bound at offsets up to 8), row_scale, f16, and tiles of 192 over
    # N = 4096. Appended last (PTX labels carry module position).
    correctness += [
        case("lazy_ln_8192x512x512", 8192, 512, 512, prologue="layer_norm"),
        case("lazy_ln_odd_m", 1000, 1024, 256, prologue="layer_norm"),
        case("lazy_ln_n200", 1001, 512, 200, prologue="layer_norm"),
        case("lazy_ln_nk_bias_4097x768x768", 4097, 768, 768, prologue="layer_norm",
             col_bias=True, transpose_rhs=True),
        case("lazy_ln_offset4_nk", 3000, 1024, 1024, prologue="layer_norm",
             transpose_rhs=True, a_offset=4.0),
        case("lazy_ln_rowscale_residual", 2000, 256, 384, prologue="layer_norm",
             epilogue="row_scale", row_scale=True, col_bias=True, residual=True),
        case("f16_lazy_ln_odd_m", 999, 512, 384, prologue="layer_norm", dtype="f16"),
        case("lazy_ln_65536x1024x4096_nk", 65536, 1024, 4096, prologue="layer_norm",
             transpose_rhs=True),
    ]
    # Per-head norms (norm_group_size: Qwen3's / Gemma 3's q_norm, k_norm):
    # heads of 128 in tiles of 256, of 256, a LayerNorm with weight and bias
    # over heads of 64 with a residual, heads of 32 in N = 96 (a tile of 128
    # whose last group is past N), f32 output, odd M. Appended last (PTX
    # labels carry module position).
    correctness += [
        case("heads_rms_g128_4099x2048x2048_nk", 4099, 2048, 2048, epilogue="rms_norm",
             weight=True, save_stats=True, transpose_rhs=True, group=128),
        case("heads_rms_g256_1001x512x1024", 1001, 512, 1024, epilogue="rms_norm",
             weight=True, save_stats=True, group=256),
        case("heads_ln_g64_3000x256x512_residual", 3000, 256, 512, epilogue="layer_norm",
             residual=True, weight=True, bias=True, save_stats=True, group=64),
        case("heads_rms_g32_n96", 777, 128, 96, epilogue="rms_norm", weight=True,
             save_stats=True, group=32),
        case("heads_ln_g128_f32out_bias", 999, 256, 512, epilogue="layer_norm",
             col_bias=True, weight=True, save_stats=True, out="f32", group=128),
        # A decoder layer's input RMSNorm as the Lazy Pre-Norm prologue of
        # q_proj with its per-head q_norm (fusion-fuse's form of Qwen3).
        case("heads_lazy_rms_g128_2001x1024x1024_nk", 2001, 1024, 1024,
             prologue="rms_norm", epilogue="rms_norm", weight=True, save_stats=True,
             transpose_rhs=True, group=128),
    ]
    # A residual with no norm (Llama's o_proj / down_proj plus the residual
    # stream, foldGemmResiduals), added chunk by chunk in the store: tiles of
    # 256 (four chunks), odd M; with a column bias and a partial last column
    # block; an f32 output (stored from registers) with both. Appended last
    # (PTX labels carry module position).
    correctness += [
        case("residual_nk_3001x1024x4096", 3001, 1024, 4096, residual=True,
             transpose_rhs=True),
        case("residual_colbias_1001x256x1000", 1001, 256, 1000, residual=True,
             col_bias=True),
        case("residual_colbias_f32out_999x256x520", 999, 256, 520, residual=True,
             col_bias=True, out="f32"),
    ]
    # Shapes the planner gives a pair of CTAs along M (cluster_m = 2, on by
    # default: more tiles than SMs): odd row-block counts, whose last
    # pair's second CTA lies past M, and partial last row and column
    # blocks; a Lazy Pre-Norm prologue, nn.Linear's B, a row scale with an
    # f32 output. (The residual with a column bias ran as a pair in session
    # 44; the planner now keeps it on one CTA: it spilled as a pair.)
    # Compiled with --no-multicast they are one CTA per tile. Appended last
    # (PTX labels carry module position).
    correctness += [
        case("mc_gemm_17019x128x256", 17019, 128, 256),
        case("mc_gemm_38437x520x512", 38437, 520, 512),
        case("mc_lazy_rms_33333x1024x768", 33333, 1024, 768, prologue="rms_norm"),
        case("mc_residual_colbias_nk_20001x768x1000", 20001, 768, 1000,
             residual=True, col_bias=True, transpose_rhs=True),
        case("mc_rowscale_f32out_17001x512x384", 17001, 512, 384,
             epilogue="row_scale", row_scale=True, out="f32"),
    ]
    bench = []
    for d in (256, 512, 1024, 2048, 4096):
        bench.append(case(f"bench_gemm_{d}", 262144, d, d))
        bench.append(case(f"bench_lazy_rms_{d}", 262144, d, d, prologue="rms_norm"))
    # nn.Linear's weight layout: B [N, K] (K-major wgmma operands).
    for d in (1024, 4096):
        bench.append(case(f"bench_gemm_nk_{d}", 262144, d, d, transpose_rhs=True))
    for d in (256, 512, 1024, 2048, 4096):
        bench.append(case(f"bench_rms_epi_{d}", 262144, d, d, epilogue="rms_norm"))
        bench.append(case(f"bench_ln_epi_{d}", 262144, d, d, epilogue="layer_norm"))
    # The usual post-norm of a transformer block: LayerNorm(x @ W + residual)
    # with weight and bias, statistics saved for backward.
    for d in (1024, 4096):
        bench.append(case(f"bench_ln_epi_full_{d}", 262144, d, d, epilogue="layer_norm",
                          residual=True, weight=True, bias=True, save_stats=True))
    # Which of the extras costs what, at a cluster of 4.
    bench.append(case("bench_ln_epi_residual_1024", 262144, 1024, 1024,
                      epilogue="layer_norm", residual=True))
    bench.append(case("bench_ln_epi_affine_1024", 262144, 1024, 1024,
                      epilogue="layer_norm", weight=True, bias=True))
    bench.append(case("bench_ln_epi_stats_1024", 262144, 1024, 1024,
                      epilogue="layer_norm", save_stats=True))
    return {"correctness": correctness, "bench": bench}


def mlir_function(c):
    m, k, n = c["m"], c["k"], c["n"]
    half = c["dtype"]
    t = lambda *shape, e=half: "tensor<" + "x".join(map(str, shape)) + "x" + e + ">"
    b_shape = (n, k) if c["transpose_rhs"] else (k, n)
    args = [("a", t(m, k)), ("b", t(*b_shape))]
    operands = ""
    if c["residual"]:
        args.append(("r", t(m, n)))
        operands += f" residual(%r : {t(m, n)})"
    if c["row_scale"]:
        args.append(("s", t(m, e="f32")))
        operands += f" row_scale(%s : {t(m, e='f32')})"
    if c["col_bias"]:
        args.append(("cb", t(n)))
        operands += f" col_bias(%cb : {t(n)})"
    g = c.get("group", 0)
    pn = g or n  # the norm parameters' size
    if c["weight"]:
        args.append(("w", t(pn)))
        operands += f" norm_weight(%w : {t(pn)})"
    if c["bias"]:
        args.append(("nb", t(pn)))
        operands += f" norm_bias(%nb : {t(pn)})"
    results = [t(m, n, e=c["out"])]
    nstats = 0
    if c["save_stats"]:
        nstats = 2 if c["epilogue"] == "layer_norm" else 1
        stat = t(m, n // g, e="f32") if g else t(m, e="f32")
        results += [stat] * nstats
    attrs = []
    if c["prologue"] != "none":
        attrs += [f"prologue = #fusion.prologue<{c['prologue']}>",
                  f"prologue_epsilon = {c['prologue_eps']:e} : f32"]
    if c["epilogue"] != "none":
        attrs.append(f"epilogue = #fusion.epilogue<{c['epilogue']}>")
    if c["epilogue"] in ("rms_norm", "layer_norm"):
        attrs.append(f"epsilon = {c['eps']:e} : f32")
    if g:
        attrs.append(f"norm_group_size = {g} : i64")
    if c["save_stats"]:
        attrs.append("save_stats")
    if c["transpose_rhs"]:
        attrs.append("transpose_rhs")
    names = ", ".join(f"%y{i}" for i in range(len(results)))
    sig = ", ".join(f"%{a}: {ty}" for a, ty in args)
    res = ", ".join(results)
    return (f"func.func @{c['name']}({sig}) -> ({res}) {{\n"
            f"  {names} = fusion.fused_matmul %a, %b{operands} {{{', '.join(attrs)}}}\n"
            f"      : {t(m, k)}, {t(*b_shape)} -> {res}\n"
            f"  return {names} : {res}\n}}\n")


def loader_signature(c):
    m, k, n = c["m"], c["k"], c["n"]
    h = c["dtype"]
    b_shape = f"[{n},{k}]" if c["transpose_rhs"] else f"[{k},{n}]"
    parts = [f"a: {h}[{m},{k}]", f"b: {h}{b_shape}"]
    if c["residual"]:
        parts.append(f"r: {h}[{m},{n}]")
    if c["row_scale"]:
        parts.append(f"s: f32[{m}]")
    if c["col_bias"]:
        parts.append(f"cb: {h}[{n}]")
    g = c.get("group", 0)
    pn = g or n
    if c["weight"]:
        parts.append(f"w: {h}[{pn}]")
    if c["bias"]:
        parts.append(f"nb: {h}[{pn}]")
    parts.append(f"y: {c['out']}[{m},{n}]")
    if c["save_stats"]:
        stat = f"f32[{m},{n // g}]" if g else f"f32[{m}]"
        if c["epilogue"] == "layer_norm":
            parts.append(f"mean: {stat}")
        parts.append(f"rstd: {stat}")
    return "; ".join(parts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--suite", default="correctness", choices=["correctness", "bench"])
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    cases = suites()[a.suite]
    with open(os.path.join(a.outdir, f"{a.suite}.mlir"), "w") as f:
        f.write('module attributes {fusion.target = #fusion.target<"sm_90a">} {\n')
        for c in cases:
            f.write(mlir_function(c))
        f.write("}\n")
    for c in cases:
        c["signature"] = loader_signature(c)
    with open(os.path.join(a.outdir, f"{a.suite}.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main()
