"""Prints a module of attention kernel variants for the ptxas sweep
(attention-ptxas-sweep-sm90a.mlir): fusion.gdpa over head dimensions D and
Dv of 64 to 256, key lengths 1 to 256 (padded to 64), every activation,
bf16 and f16 (the stages follow from the shared memory: one where two do
not fit), named gdpa_<i>; then fusion.norm_attention over 1 to 4 heads,
D = 64 and 128, key lengths up to D, with and without the norms'
parameters, named flash_<i>; then fusion.gdpa_grad (the backward kernel)
over D, Dv of 64 and 128, key lengths 1 to 128, every activation, bf16 and
f16, named grad_<i>; last, fusion.norm_attention with jagged q (i32 and i64
offsets) over 1 to 4 heads, named jflash_<i> (both chips).

With the argument sm_100a, the variants the sm_100a (tcgen05) attention
kernels take (attention-ptxas-sweep-sm100a.mlir): the same fusion.gdpa grid
(S and O in kvTile + Dv <= 512 tensor-memory columns), jagged fusion.gdpa
(i32 and i64 offsets) over D, Dv and key lengths, named jagged_<i>, and the
same fusion.norm_attention cases, then fusion.gdpa_grad (the tcgen05 backward)
over D, Dv of 64 and 128, key lengths 1 to 128, every activation, bf16 and
f16, named grad_<i>, and jagged fusion.gdpa_grad (i32 and i64 offsets),
named jgrad_<i>.

Both chips end with fusion.gdpa_grad adding a residual to dq: the grad_<i>
cases, then the jagged jgrad_<i> ones, the residual do itself where D = Dv
(every other case) or an operand of its own, named rgrad_<i>. Both print
fusion.gdpa with a residual after the gdpa grid: dense and jagged, the
query itself or another tensor, named res_<i>.

    python3 gen_attention_grid.py [sm_100a] > grid.mlir
"""
import itertools
import sys

ACTS = ["identity", "relu", "gelu", "gelu_tanh", "silu"]


def gdpa(i, d, dv, kv, act, dt):
    q, k = f"tensor<?x?x2x{d}x{dt}>", f"tensor<?x{kv}x2x{d}x{dt}>"
    v, o = f"tensor<?x{kv}x2x{dv}x{dt}>", f"tensor<?x?x2x{dv}x{dt}>"
    return (f"func.func @gdpa_{i}(%q: {q}, %k: {k}, %v: {v}) -> {o} {{\n"
            f"  %o = fusion.gdpa %q, %k, %v {{activation = #fusion.activation<{act}>, scale = 0.125 : f32}}"
            f" : {q}, {k}, {v} -> {o}\n  return %o : {o}\n}}\n")


def residual(i, d, dv, kv, act, dt, off, own):
    """fusion.gdpa with a residual: the query itself (own, D = Dv) or
    another tensor of the output's shape; dense, or jagged with `off`
    offsets."""
    lead = "?x" if off else "?x?x"
    q, k = f"tensor<{lead}2x{d}x{dt}>", f"tensor<?x{kv}x2x{d}x{dt}>"
    v, o = f"tensor<?x{kv}x2x{dv}x{dt}>", f"tensor<{lead}2x{dv}x{dt}>"
    args = f"%q: {q}, %k: {k}, %v: {v}" + (f", %off: tensor<?x{off}>" if off else "")
    args += "" if own else f", %r: {o}"
    jag = f" offsets(%off : tensor<?x{off}>)" if off else ""
    res = f" residual(%q : {q})" if own else f" residual(%r : {o})"
    return (f"func.func @res_{i}({args}) -> {o} {{\n"
            f"  %o = fusion.gdpa %q, %k, %v{jag}{res} "
            f"{{activation = #fusion.activation<{act}>, scale = 0.125 : f32}}"
            f" : {q}, {k}, {v} -> {o}\n  return %o : {o}\n}}\n")


def flash(i, h, d, kv, params, dt):
    q, k = f"tensor<?x?x{h}x{d}x{dt}>", f"tensor<?x{kv}x{h}x{d}x{dt}>"
    w = f"tensor<{h * d}x{dt}>"
    s = "tensor<?x?xf32>"
    args = f"%q: {q}, %k: {k}, %v: {k}" + (f", %a: {w}, %b: {w}, %g: {w}" if params else "")
    opt = (f" ln_weight(%a : {w}) ln_bias(%b : {w}) rms_weight(%g : {w})" if params else "")
    return (f"func.func @flash_{i}({args}) -> ({q}, {s}, {s}, {s}) {{\n"
            f"  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v{opt} "
            f"{{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, "
            f"ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}}"
            f" : {q}, {k}, {k} -> {q}, {s}, {s}, {s}\n"
            f"  return %o, %m, %r, %rr : {q}, {s}, {s}, {s}\n}}\n")


def jagged_flash(i, h, d, kv, params, dt, off):
    q, k = f"tensor<?x{h}x{d}x{dt}>", f"tensor<?x{kv}x{h}x{d}x{dt}>"
    w = f"tensor<{h * d}x{dt}>"
    s = "tensor<?xf32>"
    args = (f"%q: {q}, %k: {k}, %v: {k}, %off: tensor<?x{off}>"
            + (f", %a: {w}, %b: {w}, %g: {w}" if params else ""))
    opt = (f" ln_weight(%a : {w}) ln_bias(%b : {w}) rms_weight(%g : {w})" if params else "")
    return (f"func.func @jflash_{i}({args}) -> ({q}, {s}, {s}, {s}) {{\n"
            f"  %o, %m, %r, %rr = fusion.norm_attention %q, %k, %v offsets(%off : tensor<?x{off}>){opt} "
            f"{{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, "
            f"ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}}"
            f" : {q}, {k}, {k} -> {q}, {s}, {s}, {s}\n"
            f"  return %o, %m, %r, %rr : {q}, {s}, {s}, {s}\n}}\n")


def grad(i, d, dv, kv, act, dt):
    q, k = f"tensor<?x?x2x{d}x{dt}>", f"tensor<?x{kv}x2x{d}x{dt}>"
    v, o = f"tensor<?x{kv}x2x{dv}x{dt}>", f"tensor<?x?x2x{dv}x{dt}>"
    return (f"func.func @grad_{i}(%do: {o}, %q: {q}, %k: {k}, %v: {v}) -> ({q}, {k}, {v}) {{\n"
            f"  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {{activation = #fusion.activation<{act}>, scale = 0.125 : f32}}"
            f" : {o}, {q}, {k}, {v} -> {q}, {k}, {v}\n  return %dq, %dk, %dv : {q}, {k}, {v}\n}}\n")


def jagged(i, d, dv, kv, act, dt, off):
    q, k = f"tensor<?x2x{d}x{dt}>", f"tensor<?x{kv}x2x{d}x{dt}>"
    v, o = f"tensor<?x{kv}x2x{dv}x{dt}>", f"tensor<?x2x{dv}x{dt}>"
    return (f"func.func @jagged_{i}(%q: {q}, %k: {k}, %v: {v}, %off: tensor<?x{off}>) -> {o} {{\n"
            f"  %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<?x{off}>) "
            f"{{activation = #fusion.activation<{act}>, scale = 0.125 : f32}}"
            f" : {q}, {k}, {v} -> {o}\n  return %o : {o}\n}}\n")


def jagged_grad(i, d, dv, kv, act, dt, off):
    q, k = f"tensor<?x2x{d}x{dt}>", f"tensor<?x{kv}x2x{d}x{dt}>"
    v, o = f"tensor<?x{kv}x2x{dv}x{dt}>", f"tensor<?x2x{dv}x{dt}>"
    return (f"func.func @jgrad_{i}(%do: {o}, %q: {q}, %k: {k}, %v: {v}, %off: tensor<?x{off}>) -> ({q}, {k}, {v}) {{\n"
            f"  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%off : tensor<?x{off}>) "
            f"{{activation = #fusion.activation<{act}>, scale = 0.125 : f32}}"
            f" : {o}, {q}, {k}, {v} -> {q}, {k}, {v}\n  return %dq, %dk, %dv : {q}, {k}, {v}\n}}\n")


def residual_grad(i, d, dv, kv, act, dt, off, from_do):
    """fusion.gdpa_grad with a residual added to dq: do itself (from_do, the
    block's dh; D = Dv) or an operand of its own; jagged with offsets `off`
    (i32 or i64), dense without."""
    lead = "" if off else "?x"
    q, k = f"tensor<?x{lead}2x{d}x{dt}>", f"tensor<?x{kv}x2x{d}x{dt}>"
    v, o = f"tensor<?x{kv}x2x{dv}x{dt}>", f"tensor<?x{lead}2x{dv}x{dt}>"
    args = f"%do: {o}, %q: {q}, %k: {k}, %v: {v}"
    opts = ""
    if off:
        args += f", %off: tensor<?x{off}>"
        opts += f" offsets(%off : tensor<?x{off}>)"
    if not from_do:
        args += f", %r: {q}"
    opts += f" residual({'%do' if from_do else '%r'} : {q})"
    return (f"func.func @rgrad_{i}({args}) -> ({q}, {k}, {v}) {{\n"
            f"  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v{opts} "
            f"{{activation = #fusion.activation<{act}>, scale = 0.125 : f32}}"
            f" : {o}, {q}, {k}, {v} -> {q}, {k}, {v}\n  return %dq, %dk, %dv : {q}, {k}, {v}\n}}\n")


def fits(d, dv, kv):
    """Whether one stage of q, k, v and the P tiles fits sm_90a's 227 KB
    (AttentionSpec.h's layout); larger combinations are refused."""
    t = -(-kv // 64) * 64
    return 128 * d * 2 + t * d * 2 + t * dv * 2 + 2 * 64 * max(t, dv) * 2 + 1024 <= 227 * 1024


def main():
    sm100 = sys.argv[1:] == ["sm_100a"]
    chip = "sm_100a" if sm100 else "sm_90a"
    print(f'module attributes {{fusion.target = #fusion.target<"{chip}">}} {{')
    kvs = [1, 64, 100, 128, 200, 256]
    for i, (d, dv) in enumerate(itertools.product([64, 128, 192, 256], [64, 128, 256])):
        kv = next(k for k in kvs[i % len(kvs)::-1] if fits(d, dv, k))
        print(gdpa(i, d, dv, kv, ACTS[i % len(ACTS)], "bf16" if i % 3 else "f16"))
    # fusion.gdpa with a residual (both chips): dense and jagged, the query
    # itself or another tensor, Dv up to 256 (the most residual registers).
    residuals = [(64, 64, 128, None, True), (128, 128, 128, None, False),
                 (128, 128, 128, "i32", True), (64, 256, 100, None, False),
                 (256, 256, 64, "i64", False), (128, 64, 200, "i64", False),
                 (256, 128, 1, None, False), (64, 256, 64, "i32", False)]
    for i, (d, dv, kv, off, own) in enumerate(residuals):
        print(residual(i, d, dv, kv, ACTS[(i + 3) % len(ACTS)], "f16" if i % 4 == 1 else "bf16",
                       off, own))
    if sm100:
        shapes = [(128, 128, 128), (64, 256, 100), (256, 64, 64), (128, 64, 1)]
        for i, (d, dv, kv) in enumerate(shapes):
            print(jagged(i, d, dv, kv, ACTS[(i + 1) % len(ACTS)], "bf16" if i % 2 else "f16",
                         "i64" if i % 2 else "i32"))
    cases = [(1, 128, 128, True), (2, 128, 128, True), (3, 64, 64, False), (4, 128, 128, True),
             (2, 64, 40, True), (4, 64, 64, False), (2, 128, 72, False), (3, 128, 128, True)]
    for i, (h, d, kv, params) in enumerate(cases):
        print(flash(i, h, d, kv, params, "f16" if i == 5 else "bf16"))
    grads = [(128, 128, 128), (128, 128, 100), (64, 64, 128), (64, 128, 64),
             (128, 64, 128), (64, 64, 1), (128, 128, 64), (64, 128, 128),
             (128, 128, 128), (128, 64, 40)]
    for i, (d, dv, kv) in enumerate(grads):
        print(grad(i, d, dv, kv, ACTS[i % len(ACTS)], "f16" if i % 4 == 3 else "bf16"))
    jgrads = [(128, 128, 128), (64, 64, 40), (64, 128, 100), (128, 64, 64),
              (128, 128, 1), (64, 64, 128)]
    if sm100:
        for i, (d, dv, kv) in enumerate(jgrads):
            print(jagged_grad(i, d, dv, kv, ACTS[(i + 2) % len(ACTS)],
                              "bf16" if i % 2 else "f16", "i64" if i % 2 else "i32"))
    # FlashNormAttention with jagged q (both chips), after the rest so that
    # the names above keep their kernels.
    jflash = [(1, 128, 128, True), (2, 128, 128, True), (3, 128, 96, False),
              (4, 128, 128, True), (2, 128, 80, True), (4, 128, 72, False),
              (3, 64, 40, True)]
    for i, (h, d, kv, params) in enumerate(jflash):
        print(jagged_flash(i, h, d, kv, params, "f16" if i == 5 else "bf16",
                           "i64" if i % 2 else "i32"))
    # fusion.gdpa_grad with a residual (both chips), last: the backward
    # cases above (grad_<i>, then jgrad_<i>'s jagged ones), each with the
    # residual do itself where D = Dv and i is even (sm_90a reads it from
    # the stage's dO tile), else an operand of its own (global memory).
    for i, (d, dv, kv) in enumerate(grads):
        print(residual_grad(i, d, dv, kv, ACTS[i % len(ACTS)],
                            "f16" if i % 4 == 3 else "bf16", None, d == dv and i % 2 == 0))
    for i, (d, dv, kv) in enumerate(jgrads):
        print(residual_grad(len(grads) + i, d, dv, kv, ACTS[(i + 2) % len(ACTS)],
                            "bf16" if i % 2 else "f16", "i64" if i % 2 else "i32",
                            d == dv and i % 2 == 0))
    print("}")


if __name__ == "__main__":
    main()
