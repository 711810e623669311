"""Writes one module with a function for every kernel variant the sm_90a
generator emits: each tile_n the planner picks for a single-CTA row
(N in {64, 128, 192, 256}) x prologue (none, Lazy rms_norm) x epilogue
(none, row_scale + col_bias, rms_norm + weight + saved rstd, layer_norm +
residual + weight + bias + saved mean/rstd) x output type (bf16, f32), and
the bf16-output ones again with a transposed B (transpose_rhs: B [N, K],
K-major wgmma operands).
The kernel code depends on M and K only at run time, so this covers every
variant the generator can produce today.

    python3 gen_variant_grid.py > grid.mlir

With the argument sm_100a, the grid of the sm_100a (tcgen05) generator
instead, which emits the plain GEMM and its element-wise epilogue pieces
only: each tile_n (64, 128, 192, 256) x epilogue pieces (none; row_scale +
col_bias; row_scale + col_bias + a bf16 residual) x output (bf16, f32) x B
(row-major [K, N]: N-major operand; transpose_rhs [N, K]: K-major), and f16
operands at tile_n 256; then weight gradients (transpose_lhs, an M-major A)
for each tile_n with either B, as the planner sizes them: M = 1024 takes
split-K (an f32 workspace kernel and its _splitk sum kernel), M = 16384 does
not (68 GEMM kernels, 8 sum kernels).

Then the norm epilogues over a row one CTA holds, as the planner sizes them
(tile_n = N up to the 512 tensor-memory columns; past 256 one accumulator
stage and two MMAs per k16): each N in 64..512 (step 64) x (rms_norm +
weight + saved rstd; layer_norm + residual + weight + bias + saved
mean/rstd) x output (bf16, f32); transpose_rhs at N 320 and 512 (the MMA
split with a K-major B); rms_norm with col_bias and a residual (pass 1
writes the row back into tensor memory) at N 256 and 512; f16 operands at N 256 and 512 (40 norm kernels).
And the norm rows a cluster shares (DSMEM), as the planner splits them:
N = 640 (2 x 320), 1032 (3 x 384, the last CTA 264 columns), 2048 (4 x 512),
8192 (16 x 512) x (rms_norm, layer_norm as above) x output (bf16, f32)
(16 cluster kernels). And the rows wider than a cluster of 16, through
global memory in tiles of 512: N = 8704 (17 tiles), 12288 (24), 16384 (32)
x (rms_norm, layer_norm) x output (bf16, f32) (12 kernels).
And the grad epilogues (rms_norm_grad with x_hat; rms_norm_grad with x, the
weight and dweight; layer_norm_grad with x, mean, the weight, dweight,
dbias and a residual) over a row one CTA holds (N = 256, 384, 512) or a
cluster shares (1024, 2048, 8192) x output (bf16, f32), and with Lazy
Pre-Norm and col_bias at N = 512 (27 kernels, 19 parameter sums).
And Lazy Pre-Norm (prologue rms_norm, its row sums read by warps 2-3): each
tile_n x (none; row_scale + col_bias) x output (bf16, f32), a K-major B and
f16 operands at 256; with an rms_norm / layer_norm epilogue at N = 256,
512, a cluster of 4 (N = 2048) and global rows (N = 12288) (22 Lazy
kernels).

And the LayerNorm prologue (Lazy Pre-Norm of a LayerNorm: row sums and
sums of squares read by warps 2-3, B's column sums as col_sum) over the same
cases as Lazy Pre-Norm's (22 kernels).

    python3 gen_variant_grid.py sm_100a > grid-sm100a.mlir

With the argument ln_prologue, the sm_90a grid of the LayerNorm prologue
(B's column sums given as col_sum [N] f32): each N x epilogue x output as
in the sm_90a grid, but no norm epilogue at N = 256 (the kernel takes the
LayerNorm prologue up to tile_n 192; N = 256 without a norm is planned as
tiles of 192) (42 kernels), kept apart from the sm_90a grid so that its 96
recorded kernels stay as they are.

    python3 gen_variant_grid.py ln_prologue > grid-ln.mlir
"""
import sys

EPILOGUES = {
    "none": ("", "", []),
    "row_scale": (" row_scale(%s : tensor<1000xf32>) col_bias(%cb : tensor<{n}xbf16>)",
                  "epilogue = #fusion.epilogue<row_scale>",
                  ["%s: tensor<1000xf32>", "%cb: tensor<{n}xbf16>"]),
    "rms_norm": (" norm_weight(%w : tensor<{n}xbf16>)",
                 "epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats",
                 ["%w: tensor<{n}xbf16>"]),
    "layer_norm": (" residual(%r : tensor<1000x{n}xbf16>) norm_weight(%w : tensor<{n}xbf16>) norm_bias(%nb : tensor<{n}xbf16>)",
                   "epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats",
                   ["%r: tensor<1000x{n}xbf16>", "%w: tensor<{n}xbf16>", "%nb: tensor<{n}xbf16>"]),
}
STATS = {"none": 0, "row_scale": 0, "rms_norm": 1, "layer_norm": 2}

SM100_PIECES = {
    "none": EPILOGUES["none"],
    "scale_bias": EPILOGUES["row_scale"],
    "residual": (" residual(%r : tensor<1000x{n}xbf16>) row_scale(%s : tensor<1000xf32>) col_bias(%cb : tensor<{n}xbf16>)",
                 "epilogue = #fusion.epilogue<row_scale>",
                 ["%r: tensor<1000x{n}xbf16>", "%s: tensor<1000xf32>", "%cb: tensor<{n}xbf16>"]),
}


def emit(name, lhs, b, operands, attr, args, n, results):
    """func @name(%a: lhs, %b: b, args...) -> (results): one fused_matmul."""
    res = ", ".join(results)
    sig = ", ".join([f"%a: {lhs}", f"%b: {b}"] + [x.format(n=n) for x in args])
    names = ", ".join(f"%y{i}" for i in range(len(results)))
    print(f"func.func @{name}({sig}) -> ({res}) {{")
    print(f"  {names} = fusion.fused_matmul %a, %b{operands.format(n=n)} {{{', '.join(attr)}}}")
    print(f"      : {lhs}, {b} -> {res}")
    print(f"  return {names} : {res}\n}}")


def sm100_grid():
    print('module attributes {fusion.target = #fusion.target<"sm_100a">} {')
    cases = [(n, pieces, out, transposed, "bf16")
             for n in (64, 128, 192, 256) for pieces in SM100_PIECES
             for out in ("bf16", "f32") for transposed in (False, True)]
    cases += [(256, pieces, "bf16", transposed, "f16")
              for pieces in ("none", "scale_bias") for transposed in (False, True)]
    for n, pieces, out, transposed, ab in cases:
        operands, attrs, args = SM100_PIECES[pieces]
        if ab == "f16":
            operands = operands.replace("bf16", "f16")
            args = [x.replace("bf16", "f16") for x in args]
        name = f"t_n{n}_{pieces}_{out}_{ab}" + ("_nk" if transposed else "")
        attr = [a for a in [attrs] if a] + (["transpose_rhs"] if transposed else [])
        b = f"tensor<{n}x512x{ab}>" if transposed else f"tensor<512x{n}x{ab}>"
        emit(name, f"tensor<1000x512x{ab}>", b, operands, attr, args, n,
             [f"tensor<1000x{n}x{out}>"])
    # Weight gradients dy^T x: lhs [K, M] (transpose_lhs), K = 2048 tokens.
    for n in (64, 128, 192, 256):
        for m in (1024, 16384):
            for transposed in (False, True):
                name = f"t_wgrad_m{m}_n{n}" + ("_nk" if transposed else "")
                b = f"tensor<{n}x2048xbf16>" if transposed else f"tensor<2048x{n}xbf16>"
                attr = "transpose_lhs" + (", transpose_rhs" if transposed else "")
                emit(name, f"tensor<2048x{m}xbf16>", b, "", [attr], [], n,
                     [f"tensor<{m}x{n}xf32>"])
    sm100_norm_grid()
    sm100_lazy_grid()
    sm100_lazy_grid(LAZY_LN, "lazyln")
    sm100_grad_grid()
    print("}")


SM100_NORMS = {
    "rms": EPILOGUES["rms_norm"],
    "ln": EPILOGUES["layer_norm"],
    "rms_pieces": (" residual(%r : tensor<1000x{n}xbf16>) col_bias(%cb : tensor<{n}xbf16>) norm_weight(%w : tensor<{n}xbf16>)",
                   "epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats",
                   ["%r: tensor<1000x{n}xbf16>", "%cb: tensor<{n}xbf16>", "%w: tensor<{n}xbf16>"]),
}
SM100_NORM_STATS = {"rms": 1, "ln": 2, "rms_pieces": 1}


def sm100_norm_grid():
    """The norm epilogues of the sm_100a kernel (see the module docstring)."""
    cases = [(n, epi, out, False, "bf16") for n in range(64, 513, 64)
             for epi in ("rms", "ln") for out in ("bf16", "f32")]
    cases += [(n, epi, "bf16", True, "bf16") for n in (320, 512) for epi in ("rms", "ln")]
    cases += [(n, "rms_pieces", "bf16", False, "bf16") for n in (256, 512)]
    cases += [(n, "ln", "bf16", False, "f16") for n in (256, 512)]
    cases += [(n, epi, out, False, "bf16") for n in (640, 1032, 2048, 8192)
              for epi in ("rms", "ln") for out in ("bf16", "f32")]
    cases += [(n, epi, out, False, "bf16") for n in (8704, 12288, 16384)
              for epi in ("rms", "ln") for out in ("bf16", "f32")]
    for n, epi, out, transposed, ab in cases:
        operands, attrs, args = SM100_NORMS[epi]
        if ab == "f16":
            operands = operands.replace("bf16", "f16")
            args = [x.replace("bf16", "f16") for x in args]
        name = f"t_norm_n{n}_{epi}_{out}_{ab}" + ("_nk" if transposed else "")
        attr = [attrs] + (["transpose_rhs"] if transposed else [])
        b = f"tensor<{n}x512x{ab}>" if transposed else f"tensor<512x{n}x{ab}>"
        results = [f"tensor<1000x{n}x{out}>"] + ["tensor<1000xf32>"] * SM100_NORM_STATS[epi]
        emit(name, f"tensor<1000x512x{ab}>", b, operands, attr, args, n, results)


LAZY = "prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32"
LAZY_LN = "prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32"
COL_SUM = (" col_sum(%cs : tensor<{n}xf32>)", "%cs: tensor<{n}xf32>")


def with_col_sum(operands, args):
    """The operands and arguments of a LayerNorm-prologue case: col_sum goes
    after col_bias (the assembly format's order), before the norm's."""
    cs, cs_arg = COL_SUM
    if "col_bias(" in operands:
        at = operands.index(")", operands.index("col_bias(")) + 1
    elif "norm_weight(" in operands:
        at = operands.index(" norm_weight(")
    else:
        at = len(operands)
    return operands[:at] + cs + operands[at:], args + [cs_arg]


def sm100_lazy_grid(prologue=LAZY, tag="lazy"):
    """Lazy Pre-Norm on the sm_100a kernel (see the module docstring)."""
    ln = prologue == LAZY_LN
    cases = [(n, pieces, out, False, "bf16") for n in (64, 128, 192, 256)
             for pieces in ("none", "scale_bias") for out in ("bf16", "f32")]
    cases += [(256, "none", "bf16", True, "bf16"), (256, "scale_bias", "bf16", False, "f16")]
    for n, pieces, out, transposed, ab in cases:
        operands, attrs, args = SM100_PIECES[pieces]
        if ab == "f16":
            operands = operands.replace("bf16", "f16")
            args = [x.replace("bf16", "f16") for x in args]
        if ln:
            operands, args = with_col_sum(operands, args)
        name = f"t_{tag}_n{n}_{pieces}_{out}_{ab}" + ("_nk" if transposed else "")
        attr = [prologue] + [a for a in [attrs] if a] + (["transpose_rhs"] if transposed else [])
        b = f"tensor<{n}x512x{ab}>" if transposed else f"tensor<512x{n}x{ab}>"
        emit(name, f"tensor<1000x512x{ab}>", b, operands, attr, args, n,
             [f"tensor<1000x{n}x{out}>"])
    # With a norm epilogue: one CTA (N = 512: one accumulator stage), and a
    # cluster of 4.
    for n, epi in ((256, "ln"), (512, "rms"), (2048, "rms"), (12288, "ln")):
        operands, attrs, args = SM100_NORMS[epi]
        if ln:
            operands, args = with_col_sum(operands, args)
        results = [f"tensor<1000x{n}xbf16>"] + ["tensor<1000xf32>"] * SM100_NORM_STATS[epi]
        emit(f"t_{tag}_norm_n{n}_{epi}", "tensor<1000x512xbf16>", f"tensor<512x{n}xbf16>",
             operands, [prologue, attrs], args, n, results)


SM100_GRADS = {
    # x_hat given (normalized_input), no parameter gradient.
    "rms_xhat": (" norm_input(%x : tensor<1000x{n}xbf16>) rstd(%r : tensor<1000xf32>)",
                 "epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input",
                 ["%x: tensor<1000x{n}xbf16>", "%r: tensor<1000xf32>"], 0),
    # x, the weight and its gradient.
    "rms_weight": (" norm_weight(%g : tensor<{n}xbf16>) norm_input(%x : tensor<1000x{n}xbf16>) rstd(%r : tensor<1000xf32>)",
                   "epilogue = #fusion.epilogue<rms_norm_grad>",
                   ["%g: tensor<{n}xbf16>", "%x: tensor<1000x{n}xbf16>", "%r: tensor<1000xf32>"], 1),
    # x, mean, the weight, the bias gradient and a residual.
    "ln_full": (" residual(%res : tensor<1000x{n}xbf16>) norm_weight(%g : tensor<{n}xbf16>) norm_input(%x : tensor<1000x{n}xbf16>) mean(%m : tensor<1000xf32>) rstd(%r : tensor<1000xf32>)",
                "epilogue = #fusion.epilogue<layer_norm_grad>, with_bias_grad",
                ["%res: tensor<1000x{n}xbf16>", "%g: tensor<{n}xbf16>", "%x: tensor<1000x{n}xbf16>", "%m: tensor<1000xf32>", "%r: tensor<1000xf32>"], 2),
    # Lazy Pre-Norm's row scale and col_bias on dh (written back into
    # tensor memory), the weight and its gradient.
    "rms_pieces": (" col_bias(%cb : tensor<{n}xbf16>) norm_weight(%g : tensor<{n}xbf16>) norm_input(%x : tensor<1000x{n}xbf16>) rstd(%r : tensor<1000xf32>)",
                   LAZY + ", epilogue = #fusion.epilogue<rms_norm_grad>",
                   ["%cb: tensor<{n}xbf16>", "%g: tensor<{n}xbf16>", "%x: tensor<1000x{n}xbf16>", "%r: tensor<1000xf32>"], 1),
}


def sm100_grad_grid():
    """The grad epilogues of the sm_100a kernel (see the module docstring)."""
    cases = [(n, grad, out) for n in (256, 512, 1024, 8192)
             for grad in ("rms_xhat", "rms_weight", "ln_full") for out in ("bf16", "f32")]
    cases += [(n, "ln_full", "bf16") for n in (384, 2048)]
    cases += [(512, "rms_pieces", "bf16")]
    for n, grad, out in cases:
        operands, attrs, args, params = SM100_GRADS[grad]
        results = [f"tensor<1000x{n}x{out}>"] + [f"tensor<{n}xf32>"] * params
        emit(f"t_grad_n{n}_{grad}_{out}", "tensor<1000x512xbf16>", f"tensor<512x{n}xbf16>",
             operands, [attrs], args, n, results)


def emit_outputs(prefix, n, epi, operands, attr, args):
    """One [1000, 512] x [512, n] GEMM per output (bf16, f32, and bf16 with
    B stored [n, 512]), named prefix_<out>[_nk]."""
    for out, transposed in (("bf16", False), ("f32", False), ("bf16", True)):
        name = f"{prefix}_{out}" + ("_nk" if transposed else "")
        b = f"tensor<{n}x512xbf16>" if transposed else f"tensor<512x{n}xbf16>"
        emit(name, "tensor<1000x512xbf16>", b, operands,
             attr + (["transpose_rhs"] if transposed else []), args, n,
             [f"tensor<1000x{n}x{out}>"] + ["tensor<1000xf32>"] * STATS[epi])


def sm90_grid():
    print('module attributes {fusion.target = #fusion.target<"sm_90a">} {')
    for n in (64, 128, 192, 256):
        for prologue in ("none", "rms_norm"):
            for epi, (operands, attrs, args) in EPILOGUES.items():
                attr = [a for a in [attrs] if a]
                if prologue != "none":
                    attr.insert(0, "prologue = #fusion.prologue<rms_norm>, "
                                   "prologue_epsilon = 1.0e-06 : f32")
                emit_outputs(f"v_n{n}_{prologue}_{epi}", n, epi, operands, attr, args)
    print("}")


def sm90_ln_prologue_grid():
    """The sm_90a LayerNorm prologue (see the module docstring)."""
    print('module attributes {fusion.target = #fusion.target<"sm_90a">} {')
    for n in (64, 128, 192, 256):
        for epi, (operands, attrs, args) in EPILOGUES.items():
            # (A norm epilogue fixes tile_n = N; at 256 the kernel refuses
            # the LayerNorm prologue, invalid.mlir.)
            if n == 256 and epi in ("rms_norm", "layer_norm"):
                continue
            operands, args = with_col_sum(operands, args)
            emit_outputs(f"ln_n{n}_{epi}", n, epi, operands,
                         [LAZY_LN] + [a for a in [attrs] if a], args)
    print("}")


def main():
    if sys.argv[1:] == ["sm_100a"]:
        sm100_grid()
    elif sys.argv[1:] == ["ln_prologue"]:
        sm90_ln_prologue_grid()
    else:
        sm90_grid()


if __name__ == "__main__":
    main()
