"""Prints a module of standalone norm gradients, one function each, for the
row family's ptxas sweep (rows-grad-ptxas-sweep-sm90a.mlir): the dx kernel's
register cap (RowSpec.cpp) is chosen from an estimate, and ptxas spills
where the estimate is short.

Variants: fusion.rms_norm_grad with and without its weight,
fusion.layer_norm_grad with weight and bias gradients, the bias gradient
only or none (bf16); the weighted ones also in f16 and f32 and with a
residual of dy's type or f32; N = 256, 768, 1000 and 1001 (a ragged row,
elements), 1024, 2048, 4096, 8192.

    python3 gen_rows_grad_grid.py > grid.mlir
"""

HS = [256, 768, 1000, 1001, 1024, 2048, 4096, 8192]
KINDS = ["rms_w", "rms", "ln_wb", "ln_b", "ln"]


def function(kind, elem, h, res):
    t = f"tensor<?x{h}x{elem}>"
    layer = kind.startswith("ln")
    weighted = kind in ("rms_w", "ln_wb")
    args = [f"%dy: {t}", f"%x: {t}"]
    if layer:
        args.append("%mean: tensor<?xf32>")
    args.append("%rstd: tensor<?xf32>")
    wt = f"tensor<{h}x{elem}>"
    if weighted:
        args.append(f"%w: {wt}")
    rt = f"tensor<?x{h}x{elem if res == 'same' else 'f32'}>"
    if res != "none":
        args.append(f"%r: {rt}")
    results = [t]
    if weighted:
        results.append(f"tensor<{h}xf32>")
    if kind in ("ln_wb", "ln_b"):
        results.append(f"tensor<{h}xf32>")
    operands = "%dy, %x, %mean, %rstd" if layer else "%dy, %x, %rstd"
    types = f"{t}, {t}, tensor<?xf32>, tensor<?xf32>" if layer else f"{t}, {t}, tensor<?xf32>"
    extra = f" weight(%w : {wt})" if weighted else ""
    if res != "none":
        extra += f" residual(%r : {rt})"
    attr = " {with_bias_grad}" if kind in ("ln_wb", "ln_b") else ""
    names = ", ".join(f"%o{i}" for i in range(len(results)))
    op = "fusion.layer_norm_grad" if layer else "fusion.rms_norm_grad"
    return "\n".join([
        f"func.func @g_{kind}_{elem}_h{h}_{res}({', '.join(args)}) -> ({', '.join(results)}) {{",
        f"  {names} = {op} {operands}{extra}{attr} : {types} -> {', '.join(results)}",
        f"  return {names} : {', '.join(results)}",
        "}"])


def main():
    out = ['module attributes {fusion.target = #fusion.target<"sm_90a">} {']
    for elem in ("bf16", "f16", "f32"):
        for h in HS:
            for kind in KINDS:
                for res in ("none", "same", "f32"):
                    if res == "f32" and elem == "f32":
                        continue
                    if elem != "bf16" and kind not in ("rms_w", "ln_wb"):
                        continue
                    if res != "none" and kind not in ("rms_w", "ln_wb"):
                        continue
                    out.append(function(kind, elem, h, res))
    out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
