#!/usr/bin/env python3
"""Hand values for test/Execution/Fusion/*.mlir, in float64 with `math` only.

Each section prints the inputs and the expected results of one `@expected`
function as MLIR dense literals. Gradients are central finite differences
(h = 1e-6 in float64) of L = sum(dy * f(inputs)), computed element by element,
so they do not reuse the analytic formulas of the op descriptions.

    python3 test/Execution/Fusion/Inputs/hand_values.py [section]
"""
import copy
import math
import sys

# ---------------------------------------------------------------- helpers


def fmt(x):
    if isinstance(x, list):
        return "[" + ", ".join(fmt(e) for e in x) + "]"
    s = "%.10g" % x if x != 0 else "0.0"
    return s if any(c in s for c in ".e") else s + ".0"  # MLIR wants floats


def flat(x):
    if isinstance(x, list):
        return [e for s in x for e in flat(s)]
    return [x]


def shape(x):
    s = []
    while isinstance(x, list):
        s.append(len(x))
        x = x[0] if x else None
    return s


def unflat(vals, shp):
    if not shp:
        return vals[0]
    n = len(vals) // shp[0] if shp[0] else 0
    return [unflat(vals[i * n:(i + 1) * n], shp[1:]) for i in range(shp[0])]


def show(name, x):
    print("  %s = %s  // shape %s" % (name, fmt(x), shape(x)))


def fd_grads(f, inputs, dy, h=1e-6):
    """d/d inputs[i] of sum(dy * f(*inputs)) for every input, by central
    differences. f returns a (possibly nested) list like dy."""
    dyf = flat(dy)

    def loss(args):
        return sum(a * b for a, b in zip(dyf, flat(f(*args))))

    grads = []
    for i, x in enumerate(inputs):
        xs = flat(x)
        g = []
        for k in range(len(xs)):
            plus, minus = list(xs), list(xs)
            plus[k] += h
            minus[k] -= h
            ap = list(inputs)
            am = list(inputs)
            ap[i] = unflat(plus, shape(x))
            am[i] = unflat(minus, shape(x))
            g.append((loss(ap) - loss(am)) / (2 * h))
        grads.append(unflat(g, shape(x)))
    return grads


# ---------------------------------------------------------------- formulas


def rms_norm(x, w, eps):
    ys, rs = [], []
    for row in x:
        n = len(row)
        r = 1 / math.sqrt(sum(a * a for a in row) / n + eps)
        ys.append([a * r * (w[i] if w else 1) for i, a in enumerate(row)])
        rs.append(r)
    return ys, rs


def layer_norm(x, w, b, eps):
    ys, ms, rs = [], [], []
    for row in x:
        n = len(row)
        m = sum(row) / n
        var = sum((a - m) ** 2 for a in row) / n
        r = 1 / math.sqrt(var + eps)
        ys.append([(a - m) * r * (w[i] if w else 1) + (b[i] if b else 0)
                   for i, a in enumerate(row)])
        ms.append(m)
        rs.append(r)
    return ys, ms, rs


ACT = {
    "identity": lambda s: s,
    "relu": lambda s: max(s, 0.0),
    "gelu": lambda s: 0.5 * s * (1 + math.erf(s / math.sqrt(2))),
    "gelu_tanh": lambda s: 0.5 * s * (1 + math.tanh(math.sqrt(2 / math.pi) * (s + 0.044715 * s ** 3))),
    "silu": lambda s: s / (1 + math.exp(-s)),
}


def gdpa_batch(q, k, v, act, scale):
    """q [L, H, D], k [Lkv, H, D], v [Lkv, H, Dv] -> [L, H, Dv]."""
    L, H, Dv = len(q), len(q[0]) if q else 0, len(v[0][0])
    out = []
    for i in range(L):
        oh = []
        for h in range(H):
            o = [0.0] * Dv
            for j in range(len(k)):
                s = scale * sum(a * b for a, b in zip(q[i][h], k[j][h]))
                p = ACT[act](s)
                for e in range(Dv):
                    o[e] += p * v[j][h][e]
            oh.append(o)
        out.append(oh)
    return out


def gdpa(q, k, v, act, scale, offsets=None):
    if offsets is None:
        return [gdpa_batch(q[b], k[b], v[b], act, scale) for b in range(len(q))]
    H, Dv = len(q[0]), len(v[0][0][0])
    out = [[[0.0] * Dv for _ in range(H)] for _ in range(len(q))]
    for b in range(len(k)):
        lo, hi = offsets[b], offsets[b + 1]
        ob = gdpa_batch(q[lo:hi], k[b], v[b], act, scale)
        for i in range(lo, hi):
            out[i] = ob[i - lo]
    return out


def tokens(q):
    """Flattens the leading token dims of a dense [B, L, H, D] or jagged
    [T, H, D] q into a list of (path, [H*D] row)."""
    if isinstance(q[0][0][0], list):
        return [q[b][i] for b in range(len(q)) for i in range(len(q[b]))]
    return list(q)


def heads_flat(t):
    return [e for h in t for e in h]


def heads_unflat(row, H):
    D = len(row) // H
    return [row[h * D:(h + 1) * D] for h in range(H)]


def map_tokens(q, fn):
    if isinstance(q[0][0][0], list):
        return [[fn(t) for t in batch] for batch in q]
    return [fn(t) for t in q]


def norm_attention(q, k, v, lnw, lnb, rmsw, act, scale, ln_eps, rms_eps,
                   offsets=None):
    H = len(k[0][0])
    flat_rows = [heads_flat(t) for t in tokens(q)]
    ln_rows, lm, lr = layer_norm(flat_rows, lnw, lnb, ln_eps)
    it = iter(ln_rows)
    lnq = map_tokens(q, lambda t: heads_unflat(next(it), H))
    att = gdpa(lnq, k, v, act, scale, offsets)
    hrows = [[a + b for a, b in zip(heads_flat(x), heads_flat(y))]
             for x, y in zip(tokens(att), tokens(lnq))]
    rms_rows, rr = rms_norm(hrows, rmsw, rms_eps)
    out_rows = [[a + b for a, b in zip(r, heads_flat(t))]
                for r, t in zip(rms_rows, tokens(q))]
    it = iter(out_rows)
    out = map_tokens(q, lambda t: heads_unflat(next(it), H))
    return out, lm, lr, rr


# ---------------------------------------------------------------- sections


def sec_layer_norm():
    x = [[1.0, 2.0, 4.0], [-1.0, 0.5, 3.0]]
    w = [1.5, -0.5, 2.0]
    b = [0.1, 0.2, -0.3]
    print("layer_norm with weight and bias, eps 1e-5")
    for n, t in zip(["y", "mean", "rstd"], layer_norm(x, w, b, 1e-5)):
        show(n, t)
    print("layer_norm without weight and bias, eps 0.25")
    for n, t in zip(["y", "mean", "rstd"], layer_norm(x, None, None, 0.25)):
        show(n, t)


def sec_rms_norm_grad():
    x = [[3.0, 4.0, -1.0], [1.0, -2.0, 0.5]]
    dy = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    w = [2.0, 0.5, -1.0]
    eps = 1e-5
    print("rms_norm_grad (FD), weight", w, "eps", eps)
    dx, dw = fd_grads(lambda x_, w_: rms_norm(x_, w_, eps)[0], [x, w], dy)
    show("rstd", rms_norm(x, w, eps)[1])
    show("dx", dx)
    show("dw", dw)
    print("rms_norm_grad (FD), no weight")
    (dx,) = fd_grads(lambda x_: rms_norm(x_, None, eps)[0], [x], dy)
    show("dx", dx)


def sec_layer_norm_grad():
    x = [[1.0, 2.0, 4.0, -0.5], [-1.0, 0.5, 3.0, 2.0]]
    dy = [[0.5, -1.0, 2.0, 0.25], [1.5, 0.25, -0.75, -2.0]]
    w = [1.5, -0.5, 2.0, 0.75]
    b = [0.1, 0.2, -0.3, 0.4]
    eps = 1e-5
    print("layer_norm_grad (FD), weight, bias")
    dx, dw, db = fd_grads(lambda x_, w_, b_: layer_norm(x_, w_, b_, eps)[0],
                          [x, w, b], dy)
    _, m, r = layer_norm(x, w, b, eps)
    show("mean", m)
    show("rstd", r)
    show("dx", dx)
    show("dw", dw)
    show("db", db)
    print("layer_norm_grad (FD), no weight")
    (dx,) = fd_grads(lambda x_: layer_norm(x_, None, None, eps)[0], [x], dy)
    show("dx", dx)


GQ = [[[[0.5, -1.0], [1.0, 0.25]], [[-0.75, 0.5], [2.0, -1.5]]]]          # [1,2,2,2]
GK = [[[[1.0, 0.5], [-0.5, 1.0]], [[0.25, -1.0], [1.5, 0.5]],
       [[-1.5, 0.75], [0.5, -0.25]]]]                                      # [1,3,2,2]
GV = [[[[1.0, 2.0, -1.0], [0.5, -0.5, 1.5]], [[-2.0, 0.5, 1.0], [1.0, 1.0, -1.0]],
       [[0.25, -0.75, 2.0], [-1.5, 0.5, 0.25]]]]                           # [1,3,2,3]


def sec_gdpa():
    for act in ACT:
        print("gdpa", act, "scale 0.5")
        show("out", gdpa(GQ, GK, GV, act, 0.5))
    print("gdpa gelu_tanh scale 1.0")
    show("out", gdpa(GQ, GK, GV, "gelu_tanh", 1.0))


def sec_gdpa_jagged():
    # T = 5 tokens, B = 3 batches, offsets [0, 3, 3, 4]: batch 0 owns 3
    # tokens, batch 1 none, batch 2 one, token 4 none. H = 1, D = 2, Dv = 3,
    # Lkv = 2.
    q = [[[0.5, -1.0]], [[1.0, 0.25]], [[-0.75, 0.5]], [[2.0, -1.5]], [[1.0, 1.0]]]
    k = [[[[1.0, 0.5]], [[-0.5, 1.0]]], [[[0.25, -1.0]], [[1.5, 0.5]]],
         [[[-1.5, 0.75]], [[0.5, -0.25]]]]
    v = [[[[1.0, 2.0, -1.0]], [[0.5, -0.5, 1.5]]], [[[-2.0, 0.5, 1.0]], [[1.0, 1.0, -1.0]]],
         [[[0.25, -0.75, 2.0]], [[-1.5, 0.5, 0.25]]]]
    print("gdpa jagged silu scale 0.75 offsets [0,3,3,4]")
    show("out", gdpa(q, k, v, "silu", 0.75, [0, 3, 3, 4]))


def sec_gdpa_grad():
    do = [[[[1.0, -0.5, 0.25], [0.5, 1.5, -1.0]], [[-0.25, 0.75, 1.0], [2.0, -1.0, 0.5]]]]
    # relu: q[0][0][0][0] moved from 0.5 to 0.625 so that no score sits on
    # the kink at 0 (where central differences see half a slope).
    gq_relu = copy.deepcopy(GQ)
    gq_relu[0][0][0][0] = 0.625
    for act, scale, q in [("silu", 0.5, GQ), ("gelu_tanh", 0.5, GQ), ("gelu", 1.0, GQ),
                          ("relu", 0.5, gq_relu), ("identity", 0.25, GQ)]:
        print("gdpa_grad (FD)", act, "scale", scale, "q", q)
        dq, dk, dv = fd_grads(lambda q_, k_, v_: gdpa(q_, k_, v_, act, scale),
                              [q, GK, GV], do)
        show("dq", dq)
        show("dk", dk)
        show("dv", dv)


NQ = [[[[1.0, -0.5], [2.0, 0.25]], [[-1.0, 0.5], [0.75, -1.5]]]]   # [1,2,2,2]
NK = [[[[0.5, 1.0], [-1.0, 0.25]], [[1.0, -0.5], [0.5, 0.5]]]]     # [1,2,2,2]
NV = [[[[1.0, -1.0], [0.5, 2.0]], [[-0.5, 0.25], [1.5, -1.0]]]]    # [1,2,2,2]
LNW = [1.5, -0.5, 2.0, 0.75]
LNB = [0.1, 0.2, -0.3, 0.4]
RMSW = [0.5, 1.25, -1.0, 2.0]


def sec_norm_attention():
    print("norm_attention gelu_tanh scale 0.5 ln_eps 1e-5 rms_eps 1e-5, weights")
    for n, t in zip(["out", "ln_mean", "ln_rstd", "rms_rstd"],
                    norm_attention(NQ, NK, NV, LNW, LNB, RMSW, "gelu_tanh", 0.5, 1e-5, 1e-5)):
        show(n, t)
    print("norm_attention silu scale 1.0, no weights")
    for n, t in zip(["out", "ln_mean", "ln_rstd", "rms_rstd"],
                    norm_attention(NQ, NK, NV, None, None, None, "silu", 1.0, 1e-5, 1e-5)):
        show(n, t)


def sec_norm_attention_grad():
    dout = [[[[0.5, -1.0], [1.0, 0.25]], [[-0.25, 0.75], [2.0, -0.5]]]]
    print("norm_attention_grad (FD) gelu_tanh scale 0.5, weights")
    f = lambda q, k, v, a, b, c: norm_attention(q, k, v, a, b, c, "gelu_tanh", 0.5, 1e-5, 1e-5)[0]
    for n, t in zip(["dq", "dk", "dv", "dlnw", "dlnb", "drmsw"],
                    fd_grads(f, [NQ, NK, NV, LNW, LNB, RMSW], dout)):
        show(n, t)
    print("norm_attention_grad (FD) silu scale 1.0, no weights")
    f = lambda q, k, v: norm_attention(q, k, v, None, None, None, "silu", 1.0, 1e-5, 1e-5)[0]
    for n, t in zip(["dq", "dk", "dv"], fd_grads(f, [NQ, NK, NV], dout)):
        show(n, t)


SECTIONS = {k[4:]: v for k, v in globals().items() if k.startswith("sec_")}

if __name__ == "__main__":
    for name in sys.argv[1:] or SECTIONS:
        print("==", name)
        SECTIONS[name]()
