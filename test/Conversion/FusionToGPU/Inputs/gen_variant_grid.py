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
"""

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

print('module attributes {fusion.target = #fusion.target<"sm_90a">} {')
for n in (64, 128, 192, 256):
    for prologue in ("none", "rms_norm"):
        for epi, (operands, attrs, args) in EPILOGUES.items():
            for out, transposed in (("bf16", False), ("f32", False), ("bf16", True)):
                name = f"v_n{n}_{prologue}_{epi}_{out}" + ("_nk" if transposed else "")
                attr = [a for a in [attrs] if a]
                if prologue != "none":
                    attr.insert(0, "prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32")
                if transposed:
                    attr.append("transpose_rhs")
                b = f"tensor<{n}x512xbf16>" if transposed else f"tensor<512x{n}xbf16>"
                results = [f"tensor<1000x{n}x{out}>"] + ["tensor<1000xf32>"] * STATS[epi]
                res = ", ".join(results)
                sig = ", ".join(["%a: tensor<1000x512xbf16>", f"%b: {b}"] +
                                [x.format(n=n) for x in args])
                names = ", ".join(f"%y{i}" for i in range(len(results)))
                print(f"func.func @{name}({sig}) -> ({res}) {{")
                print(f"  {names} = fusion.fused_matmul %a, %b{operands.format(n=n)} {{{', '.join(attr)}}}")
                print(f"      : tensor<1000x512xbf16>, {b} -> {res}")
                print(f"  return {names} : {res}\n}}")
print("}")
