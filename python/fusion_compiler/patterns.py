"""Recognizes the dialect's ops in an ATen FX graph, as PyTorch writes them.

`torch.export` and AOTAutograd hand us ATen graphs in which a norm is a
handful of arithmetic nodes and a linear layer one of several forms. This
pass rewrites, in place, each recognized form into one node calling a
function of `ops.py`, and drops the nodes that are identities in inference
(`dropout` outside training, a cast to the tensor's own dtype, `clone`):

- RMSNorm: `x * rsqrt(mean(x^2, -1, keepdim) + eps)`, optionally in float32
  and cast back (Hugging Face's LlamaRMSNorm; T5LayerNorm, whose float32
  rstd multiplies x itself), optionally times a [H] weight on either side;
  `aten.rms_norm`.
- LayerNorm: `aten.layer_norm`, `aten.native_layer_norm` whose statistics
  are unused; of a 16-bit x cast to float32 and cast back (OLMo's LayerNorm,
  diffusers' FP32LayerNorm), as the LayerNorm of x; written out,
  `(x - m) * rsqrt(mean((x - m)^2) + eps)` (Cohere's LayerNorm).
- GDPA (HSTU's attention, `fusion.gdpa`): `act(scale * q k^T) v` on [B, L, H, D]
  tensors with silu, relu or gelu (exact or tanh), written with `einsum` or with
  `matmul`s of heads-first transposes (torch.export's graphs).
- Linear: `aten.linear`; `aten.addmm(b, x, w.t())` and `aten.mm(x, w.t())`
  (nn.Linear after AOTAutograd); `addmm`/`mm` with an untransposed weight;
  `aten.matmul(x, w.T)` / `aten.matmul(x, w)` of a rank-2 rhs as written
  (`x @ self.weight.T`, Falcon's FalconLinear).
- Fused gate and up projections: `linear(x, W)` of a [2I, H] weight, no
  bias, whose output (through views that keep the features dimension) is
  cut into its halves along the last dimension (`chunk(2, -1)`, `split`,
  `split_with_sizes`, or two slices) used only as `act(half) * other half`
  (Phi-3's gate_up_proj): two linears over the weight's rows, `W[:I]` for
  the first half and `W[I:]` for the second, each a view of the parameter
  (free; `aten.slice` in PyTorch, passed to the partition as its input), so
  that the gated product is the gated MLP's, one GEMM after fusion-fuse.
  With a bias the form stays as it is (the gated GEMM takes none).
- Rotary embeddings: Hugging Face's `apply_rotary_pos_emb` of q or k,
  `q * cos + rotate_half(q) * sin` with q = `x.view(B, L, H, D).transpose(1,
  2)` and cos, sin [B or 1, L, D] unsqueezed over the heads (full rotary),
  as `ops.rope` of the projection's output x [B, L, H x D], then the same
  view and transpose (`fusion.rope`; fusion-fuse can take it into the
  projection's GEMM).
- Activations: `aten.silu`, `aten.gelu` (exact or tanh) and `aten.relu` stay
  the ATen ops they are (`support.activation_kind`; an MLP's act(fc1(x)),
  the gated MLP's act(gate(x)) * up(x)); GELU written out (GPT-2's gelu_new,
  `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, or with erf) becomes
  `aten.gelu` where its input is a GEMM's.

A form is rewritten only where its intermediate values are used by nothing
else (a value saved for a backward keeps the form as it is).
"""

from __future__ import annotations

import math
import operator
from typing import Dict, List, Optional

import torch
import torch.fx as fx

from . import ops
from .dynamo_forms import GDPA, same_equation
from .support import activation_kind as _activation

aten = torch.ops.aten

# Nodes that check, and never feed, values: they do not count as users.
_CHECKS = {
    getattr(aten, name).default
    for name in ("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size",
                 "sym_constrain_range")
    if hasattr(aten, name)
}


def _is_call(node, *targets) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in targets


def _val(node):
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def _dtype(node):
    v = _val(node)
    return getattr(v, "dtype", None)


def _shape(node):
    v = _val(node)
    return tuple(v.shape) if isinstance(v, torch.Tensor) else None


def _users(node: fx.Node) -> List[fx.Node]:
    return [u for u in node.users if u.target not in _CHECKS]


def _only_user(node: fx.Node) -> Optional[fx.Node]:
    users = _users(node)
    return users[0] if len(users) == 1 else None


def _cast_target(node) -> Optional[torch.dtype]:
    """The dtype a cast node converts to, or None if `node` is not a plain cast."""
    if _is_call(node, aten.to.dtype) and len(node.args) >= 2 and not node.kwargs.get("copy"):
        return node.args[1]
    if _is_call(node, aten._to_copy.default) and set(node.kwargs) <= {"dtype"} \
            and len(node.args) == 1:
        return node.kwargs.get("dtype")
    if _is_call(node, aten.to.dtype_layout) and set(node.kwargs) <= {"dtype"}:
        return node.kwargs.get("dtype")
    if _is_call(node, torch.ops.prims.convert_element_type.default):  # Inductor's casts
        return node.args[1]
    if _is_call(node, aten.type_as.default) and len(node.args) == 2 and not node.kwargs:
        return _dtype(node.args[1])  # y.type_as(x): y.to(x.dtype)
    return None


def _replace(graph: fx.Graph, root: fx.Node, target, args, trace_from: fx.Node) -> fx.Node:
    with graph.inserting_before(root):
        new = graph.call_function(target, args)
    new.meta = dict(root.meta)
    if "stack_trace" in trace_from.meta:
        new.meta["stack_trace"] = trace_from.meta["stack_trace"]
    root.replace_all_uses_with(new)
    return new


def _drop_dead(graph: fx.Graph, nodes) -> None:
    """Erases those of `nodes` (and their checks) that nothing uses any more,
    in any order: until none is left to erase."""
    pending = [n for n in dict.fromkeys(nodes) if isinstance(n, fx.Node)]
    progress = True
    while progress:
        progress = False
        for node in list(pending):
            if node.graph is not graph or node.op in ("placeholder", "get_attr", "output"):
                pending.remove(node)
                continue
            for check in [u for u in node.users if u.target in _CHECKS]:
                graph.erase_node(check)
            if not node.users:
                graph.erase_node(node)
                pending.remove(node)
                progress = True


def _row_mean(node, of=None) -> bool:
    """Whether `node` is mean(of, [-1], keepdim=True) (of any input if None)."""
    if not (_is_call(node, aten.mean.dim) and len(node.args) >= 3 and node.args[2] is True
            and node.kwargs.get("dtype") is None and (of is None or node.args[0] is of)):
        return False
    rank = len(_shape(node) or ())
    return list(node.args[1]) in ([-1], [rank - 1])


def _rsqrt_of_mean_square(rsqrt: fx.Node):
    """(eps, add, mean, square, base) where `rsqrt` is
    rsqrt(mean(base^2, -1, keepdim=True) + eps), base^2 written as pow(base, 2)
    or base * base; else None."""
    add = rsqrt.args[0]
    if not (_is_call(add, aten.add.Tensor, aten.add.Scalar) and len(add.args) == 2
            and isinstance(add.args[1], (int, float)) and not add.kwargs):
        return None
    mean = add.args[0]
    if not _row_mean(mean):
        return None
    square = mean.args[0]
    if _is_call(square, aten.pow.Tensor_Scalar) and square.args[1] == 2:
        return float(add.args[1]), add, mean, square, square.args[0]
    if _is_call(square, aten.mul.Tensor) and square.args[0] is square.args[1]:
        return float(add.args[1]), add, mean, square, square.args[0]
    return None


def _weight_product(of: fx.Node, hidden):
    """(weight, weight_first, product) where `of`'s only user multiplies it by
    a [hidden] vector, else None."""
    product = _only_user(of)
    if not (_is_call(product, aten.mul.Tensor) and len(product.args) == 2):
        return None
    other = product.args[0] if product.args[1] is of else product.args[1]
    if other is of or _shape(other) != (hidden,) or \
            _dtype(other) not in (torch.bfloat16, torch.float16, torch.float32):
        return None
    return other, product.args[0] is other, product


def _match_rms_norm(graph: fx.Graph, rsqrt: fx.Node) -> bool:
    form = _rsqrt_of_mean_square(rsqrt)
    if form is None:
        return False
    eps, add, mean, square, xf = form
    # x * rstd (either order)
    scaled = _only_user(rsqrt)
    if not _is_call(scaled, aten.mul.Tensor):
        return False
    source = xf.args[0] if _cast_target(xf) is not None else None
    if set(scaled.args) != {xf, rsqrt}:
        # Hugging Face's T5LayerNorm: the squares of x in float32, but rstd
        # multiplies x itself, which the product promotes to float32: the same
        # values as x in float32 (the cast is exact), so the same form.
        if not (source is not None and _cast_target(xf) == torch.float32
                and _dtype(source) in (torch.bfloat16, torch.float16)
                and set(scaled.args) == {source, rsqrt} and _only_user(xf) is square):
            return False
    for n in (add, mean, square):
        if _only_user(n) is None:
            return False
    x, upcast, root = xf, False, scaled
    chain = [square, mean, add, rsqrt, scaled]
    hidden = (_shape(xf) or (None,))[-1]
    found = None
    in_float32 = False
    if source is not None and _cast_target(xf) == torch.float32 and _dtype(source) != torch.float32:
        back = _only_user(scaled)
        weighted = _weight_product(scaled, hidden)
        if _cast_target(back) == _dtype(source):
            # Hugging Face's LlamaRMSNorm: rounded back, then the weight.
            x, upcast, root = source, True, back
            chain = [xf] + chain + [back]
        elif weighted is not None and _cast_target(_only_user(weighted[2])) == _dtype(source):
            # PyTorch's rms_norm decomposed (torch.compile's graphs), Gemma's
            # RMSNorm: the weight in float32, one rounding at the end.
            found = weighted
            back = _only_user(found[2])
            x, upcast, root, in_float32 = source, True, back, True
            chain = [xf] + chain + [found[2], back]
    if _dtype(x) not in (torch.bfloat16, torch.float16, torch.float32) or len(_shape(x) or ()) < 2:
        return False
    weight, weight_first = (found[0], found[1]) if found else (None, False)
    if not in_float32:
        found = _weight_product(root, hidden)
        if found is not None:
            weight, weight_first, root = found
            chain.append(root)
    if _dtype(root) != _dtype(x):
        return False  # a promotion the dialect's op does not make
    _replace(graph, root, ops.rms_norm, (x, weight, eps, upcast, weight_first, in_float32), rsqrt)
    _drop_dead(graph, chain)
    return True


def _centered(node):
    """(x, mean) where `node` is x - mean(x, [-1], keepdim=True), else None."""
    if not (_is_call(node, aten.sub.Tensor) and len(node.args) == 2 and not node.kwargs):
        return None
    x, mean = node.args
    return (x, mean) if isinstance(x, fx.Node) and _row_mean(mean, x) else None


def _match_manual_layer_norm(graph: fx.Graph, rsqrt: fx.Node) -> bool:
    """A LayerNorm written out, `(x - m) * rsqrt(mean((x - m)^2) + eps)` with
    m = mean(x), optionally times a [H] weight and, x being a 16-bit tensor
    cast to float32, cast back (Cohere's LayerNorm): fusion.layer_norm of x,
    computed in float32 and rounded once, as written."""
    form = _rsqrt_of_mean_square(rsqrt)
    if form is None:
        return False
    eps, add, var, square, diff = form
    centered = _centered(diff)
    scaled = _only_user(rsqrt)
    if centered is None or not (_is_call(scaled, aten.mul.Tensor) and len(scaled.args) == 2
                                and rsqrt in scaled.args):
        return False
    xf, mean = centered
    other = scaled.args[0] if scaled.args[1] is rsqrt else scaled.args[1]
    if other is not diff and _centered(other) != centered:
        return False
    # Nothing outside the form reads its intermediate values.
    inner = {diff, other, square, var, add, rsqrt, scaled, mean}
    for n in (add, var, square, mean, diff, other):
        if any(u not in inner for u in _users(n)):
            return False
    chain = [scaled, rsqrt, add, var, square, diff, other, mean]
    x, root, weight = xf, scaled, None
    found = _weight_product(scaled, (_shape(xf) or (None,))[-1])
    if found is not None:
        weight, _, root = found
        chain.append(root)
    source = xf.args[0] if _cast_target(xf) == torch.float32 else None
    if source is not None and _dtype(source) in (torch.bfloat16, torch.float16) and \
            all(u in inner for u in _users(xf)):
        back = _only_user(root)
        if _cast_target(back) == _dtype(source):
            x, root = source, back
            chain += [back, xf]
    if _dtype(x) not in (torch.bfloat16, torch.float16, torch.float32) or \
            len(_shape(x) or ()) < 2 or _dtype(root) != _dtype(x):
        return False
    new = _replace(graph, root, ops.layer_norm, (x, weight, None, eps), rsqrt)
    new.meta["val"] = _val(root)
    _drop_dead(graph, chain)
    return True


def _upcast_layer_norm(node: fx.Node, out: fx.Node):
    """(x, back) where the LayerNorm `node` (output `out`) normalizes a 16-bit
    x cast to float32 and its output is cast back to x's dtype and used only
    so (OLMo's LayerNorm, diffusers' FP32LayerNorm): the dialect's layer_norm
    of x computes in float32 and rounds once, the same; else None."""
    xf = node.args[0]
    source = xf.args[0] if _cast_target(xf) == torch.float32 else None
    if source is None or _dtype(source) not in (torch.bfloat16, torch.float16) \
            or _only_user(xf) is not node:
        return None
    back = _only_user(out)
    if back is None or _cast_target(back) != _dtype(source):
        return None
    return source, back


def _match_layer_norm(graph: fx.Graph, node: fx.Node) -> bool:
    x = node.args[0]
    shape = _shape(x)
    if not shape or len(shape) < 2 or list(node.args[1]) != [shape[-1]]:
        return False
    weight = node.args[2] if len(node.args) > 2 else node.kwargs.get("weight")
    bias = node.args[3] if len(node.args) > 3 else node.kwargs.get("bias")
    eps = node.args[4] if len(node.args) > 4 else node.kwargs.get("eps", 1e-5)
    if node.target is aten.native_layer_norm.default:
        items = list(node.users)
        if not all(u.target is operator.getitem for u in items):
            return False
        if any(u.args[1] != 0 and u.users for u in items):
            return False  # the statistics are used (saved for a backward)
        outs = [u for u in items if u.args[1] == 0]
        if len(outs) != 1:
            return False
        root, upcast = outs[0], _upcast_layer_norm(node, outs[0])
        if upcast:
            x, root = upcast
        new = _replace(graph, root, ops.layer_norm, (x, weight, bias, float(eps)), node)
        new.meta["val"] = _val(root)
        _drop_dead(graph, [root] + items + [node, node.args[0]])
        return True
    root, upcast = node, _upcast_layer_norm(node, node)
    if upcast:
        x, root = upcast
    new = _replace(graph, root, ops.layer_norm, (x, weight, bias, float(eps)), node)
    if upcast:
        new.meta["val"] = _val(root)
    _drop_dead(graph, [root, node, node.args[0]])
    return True


def _transposed_weight(node) -> Optional[fx.Node]:
    """w where `node` is w.t() of a rank-2 w (t, permute [1, 0], transpose 0 1,
    numpy_T: `w.T`)."""
    if _is_call(node, aten.t.default, aten.numpy_T.default) or (_is_call(node, aten.permute.default)
                                          and list(node.args[1]) == [1, 0]) or \
            (_is_call(node, aten.transpose.int) and sorted(node.args[1:3]) in ([0, 1], [-2, -1])):
        w = node.args[0]
        if len(_shape(w) or ()) == 2:
            return w
    return None


def _match_linear(graph: fx.Graph, node: fx.Node) -> bool:
    if _is_call(node, aten.linear.default):
        x, w = node.args[0], node.args[1]
        b = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
        _replace(graph, node, ops.linear, (x, w, b), node)
        graph.erase_node(node)
        return True
    if _is_call(node, aten.addmm.default):
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return False
        b, x, rhs = node.args[:3]
    elif _is_call(node, aten.mm.default):
        b, (x, rhs) = None, node.args[:2]
    elif _is_call(node, aten.matmul.default):
        # `x @ w` / `x @ w.T` as written (Falcon's FalconLinear): tokens of any
        # leading dimensions by a rank-2 rhs; a batched rhs is not a GEMM here.
        b, (x, rhs) = None, node.args[:2]
        if len(_shape(rhs) or ()) != 2 or len(_shape(x) or ()) < 2:
            return False
    else:
        return False
    w = _transposed_weight(rhs)
    target = ops.linear if w is not None else ops.matmul
    _replace(graph, node, target, (x, w if w is not None else rhs, b), node)
    graph.erase_node(node)
    if w is not None and not rhs.users:
        graph.erase_node(rhs)
    return True


_FEATURE_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)


def _normalized_dim(dim, rank: int) -> Optional[int]:
    return dim % rank if isinstance(dim, int) and rank and -rank <= dim < rank else None


def _arg(node: fx.Node, i: int, name: str, default):
    return node.args[i] if len(node.args) > i else node.kwargs.get(name, default)


def _last_dim_slice(node, of) -> Optional[tuple]:
    """(start, stop) where `node` is aten.slice of `of`'s last dimension with
    step 1 (negative and past-the-end bounds made into [0, n]), else None."""
    shape = _shape(of)
    if not (_is_call(node, aten.slice.Tensor) and node.args[0] is of and shape and
            isinstance(shape[-1], int)):
        return None
    rank, width = len(shape), shape[-1]
    if _normalized_dim(_arg(node, 1, "dim", 0), rank) != rank - 1 or \
            _arg(node, 4, "step", 1) != 1:
        return None
    start, stop = _arg(node, 2, "start", None), _arg(node, 3, "end", None)
    start = 0 if start is None else start
    stop = width if stop is None else stop
    if not isinstance(start, int) or not isinstance(stop, int):
        return None
    start = max(start + width, 0) if start < 0 else min(start, width)
    stop = max(stop + width, 0) if stop < 0 else min(stop, width)
    return start, stop


def _last_dim_pieces(value: fx.Node):
    """[(node, start, stop)] in column order: the nodes that cut `value`'s
    last dimension into pieces covering it once, nothing else reading it:
    the getitems of a chunk, split or split_with_sizes along it (every piece
    used), or slices along it; else None."""
    shape = _shape(value)
    if not shape or not isinstance(shape[-1], int):
        return None
    rank, width = len(shape), shape[-1]
    users = _users(value)
    if len(users) == 1 and users[0].args and users[0].args[0] is value and \
            _is_call(users[0], aten.chunk.default, aten.split.Tensor,
                     aten.split_with_sizes.default):
        cut = users[0]
        if _is_call(cut, aten.split_with_sizes.default):
            sizes = _arg(cut, 1, "split_sizes", None)
            sizes = list(sizes) if sizes is not None else None
        else:
            chunks = _arg(cut, 1, "chunks" if _is_call(cut, aten.chunk.default)
                          else "split_size", None)
            if not isinstance(chunks, int) or chunks <= 0:
                return None
            # chunk(n): pieces of ceil(width / n); split(size): pieces of size.
            size = -(-width // chunks) if _is_call(cut, aten.chunk.default) else chunks
            sizes = [min(size, width - at) for at in range(0, width, size)]
        if not sizes or not all(isinstance(n, int) and n > 0 for n in sizes) or \
                sum(sizes) != width or \
                _normalized_dim(_arg(cut, 2, "dim", 0), rank) != rank - 1:
            return None
        items = _users(cut)
        if len(items) != len(sizes) or not all(u.target is operator.getitem for u in items) \
                or sorted(u.args[1] for u in items) != list(range(len(sizes))):
            return None
        bounds = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
        return [(u, bounds[u.args[1]], bounds[u.args[1] + 1])
                for u in sorted(items, key=lambda u: u.args[1])]
    found = []
    for u in users:
        bounds = _last_dim_slice(u, value)
        if bounds is None:
            return None
        found.append((u, *bounds))
    found.sort(key=lambda f: f[1])
    if not found or found[0][1] != 0 or found[-1][2] != width or \
            any(a[2] != b[1] for a, b in zip(found, found[1:])):
        return None
    return found


def _halves(value: fx.Node):
    """[(node, start, stop)]: the two nodes that take the halves of `value`'s
    last dimension, [0, n/2) and [n/2, n), and nothing else reads it
    (_last_dim_pieces: a chunk, split or split_with_sizes in two, or two
    slices); else None."""
    pieces = _last_dim_pieces(value)
    width = (_shape(value) or (0,))[-1]
    if pieces is None or [(a, b) for _, a, b in pieces] != [(0, width // 2),
                                                          (width // 2, width)]:
        return None
    return pieces


def _match_gate_up(graph: fx.Graph, gemm: fx.Node) -> bool:
    """Phi-3's gate_up_proj: `linear(x, W)` without bias, whose output (through
    views that keep the features dimension: AOTAutograd's [tokens, 2I] back
    to [b, s, 2I]) is cut into halves used only as act(one) * other,
    becomes two linears over W's rows, W[:I] for the first half and W[I:]
    for the second (aten.slice of the weight, a view: in PyTorch, the
    partition's input), with the views repeated on each: the gated MLP's
    two GEMMs, which fusion-fuse makes one."""
    from . import support
    x, w, bias = gemm.args[:3]
    if bias is not None or not isinstance(w, fx.Node) or len(_shape(w) or ()) != 2 or \
            support.reason(gemm) is not None:
        return False
    chain, value = _feature_views(gemm)
    halves = _halves(value)
    if halves is None:
        return False
    def gated(gate, up) -> bool:  # act(gate) * up, each value read once
        act = _only_user(gate)
        mul = _only_user(act) if _activation(act) is not None else None
        return _is_call(mul, aten.mul.Tensor) and len(mul.args) == 2 and not mul.kwargs and \
            set(mul.args) == {act, up} and _only_user(up) is mul
    first, second = halves[0][0], halves[1][0]
    if not (gated(first, second) or gated(second, first)):
        return False
    _linears_over_rows(graph, gemm, halves, chain, "gate_up",
                       lambda view, width: width)
    return True


def _linears_over_rows(graph: fx.Graph, gemm: fx.Node, pieces, views, what: str,
                       features, groups: Optional[tuple] = None) -> None:
    """Replaces each piece (node, start, stop) of `gemm`'s cut output by a
    linear over the weight's rows of that piece (and the bias's), with
    `views` (those between the GEMM and the cut) repeated on it, view v's
    features features(v, stop - start); then erases the cut, the views and
    `gemm`. The rows are aten.slice of the parameter (a view, free) or,
    with `groups` = (G, P), ops.head_rows: rows [start, stop) of each of G
    groups of P (GPT-NeoX's heads). Either stays in PyTorch as the
    partition's input (support.WEIGHT_ROWS: (start, stop, what, G))."""
    from . import support
    x, w, bias = gemm.args[:3]
    trace = {"stack_trace": gemm.meta["stack_trace"]} if "stack_trace" in gemm.meta else {}
    kept = {k: v for k, v in gemm.meta.items() if k not in ("val", "tensor_meta")}

    def rows_of(t, start, stop):
        if t is None:
            return None
        args = (t, 0, start, stop) if groups is None else (t, *groups, start, stop)
        target = aten.slice.Tensor if groups is None else ops.head_rows
        node = graph.call_function(target, args)
        node.meta.update(trace)
        node.meta["val"] = target(_val(t), *args[1:])
        node.meta[support.WEIGHT_ROWS] = (start, stop, what, groups and groups[0])
        return node

    with graph.inserting_before(gemm):
        for piece, start, stop in pieces:
            rows, cut = rows_of(w, start, stop), rows_of(bias, start, stop)
            new = graph.call_function(ops.linear, (x, rows, cut))
            new.meta.update(kept)
            new.meta["val"] = ops.linear(_val(x), _val(rows), _val(cut))
            for view in views:
                if _is_call(view, aten.transpose.int):
                    args = (new, *view.args[1:])
                    val = _val(new).transpose(*view.args[1:])
                else:
                    shape = [*view.args[1][:-1], features(view, stop - start)]
                    args, val = (new, shape), _val(new).reshape(shape)
                out = graph.call_function(view.target, args)
                out.meta.update({k: v for k, v in view.meta.items()
                                 if k not in ("val", "tensor_meta")})
                out.meta["val"] = val
                new = out
            piece.replace_all_uses_with(new)
    first = pieces[0][0]
    cut_node = first.args[0] if first.target is operator.getitem else None
    _drop_dead(graph, [p for p, _, _ in pieces] + [cut_node] + views[::-1] + [gemm])


def _scalar_operand(node, target, value: float):
    """The tensor operand of `node` where it is `target`(t, value) or
    `target`(value, t) (a Python scalar, within float32's precision), else None."""
    if not (_is_call(node, target) and len(node.args) == 2 and not node.kwargs):
        return None
    for t, c in (node.args, node.args[::-1]):
        if isinstance(t, fx.Node) and isinstance(c, (int, float)) and \
                abs(c - value) <= 1e-6 * abs(value):
            return t
    return None


def _other_operand(node, one) -> Optional[fx.Node]:
    """The operand of the binary `node` that is not `one`."""
    if len(node.args) != 2 or one not in node.args or node.args[0] is node.args[1]:
        return None
    other = node.args[1] if node.args[0] is one else node.args[0]
    return other if isinstance(other, fx.Node) else None


def _match_written_gelu(graph: fx.Graph, node: fx.Node) -> bool:
    """GELU written out in ATen ops, as Hugging Face's activations write it,
    from its tanh or erf `node`:

        0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   gelu_new (GPT-2's
                        NewGELUActivation), GELUTanh's Python form, gelu_accurate
        0.5 x (1 + erf(x / sqrt(2)))                       GELUActivation's Python form

    rewritten to `aten.gelu(x, approximate="tanh" | "none")`, the op the
    partitions take (`fusion.activation<gelu_tanh | gelu>`), where x is a
    GEMM's output (through views that keep the features dimension): there
    it rides in the GEMM's epilogue. The formula computed in float32 and
    rounded once differs from the module's steps, each rounded to x's
    dtype, by less than their own rounding; elsewhere the module's steps
    stay as written."""
    from .support import _through_token_views
    if _is_call(node, aten.tanh.default):
        scaled = node.args[0]
        inner = _scalar_operand(scaled, aten.mul.Tensor, math.sqrt(2 / math.pi))
        if not _is_call(inner, aten.add.Tensor) or len(inner.args) != 2:
            return False
        x = cubed = None
        for a, b in (inner.args, inner.args[::-1]):
            cube = _scalar_operand(b, aten.mul.Tensor, 0.044715)
            if _is_call(cube, aten.pow.Tensor_Scalar) and cube.args[0] is a and \
                    cube.args[1] == 3:
                x, cubed = a, [b, cube]
        if x is None:
            return False
        chain, approximate = [node, scaled, inner] + cubed, "tanh"
    elif _is_call(node, aten.erf.default):
        scaled = node.args[0]
        x = _scalar_operand(scaled, aten.div.Tensor, math.sqrt(2)) or \
            _scalar_operand(scaled, aten.mul.Tensor, math.sqrt(0.5))
        chain, approximate = [node, scaled], "none"
    else:
        return False
    one_plus = _only_user(node)
    if not isinstance(x, fx.Node) or _scalar_operand(one_plus, aten.add.Tensor, 1.0) is not node:
        return False
    root = _only_user(one_plus)
    half = _other_operand(root, one_plus) if _is_call(root, aten.mul.Tensor) else None
    if half is None or _scalar_operand(half, aten.mul.Tensor, 0.5) is not x:
        return False
    chain += [one_plus, half, root]
    if any(_only_user(n) is None for n in chain[:-1]) or _dtype(root) != _dtype(x) or \
            _shape(root) != _shape(x):
        return False
    gemm = _through_token_views(x)
    if not _is_call(gemm, ops.linear, ops.matmul):
        return False
    with graph.inserting_before(root):
        new = graph.call_function(aten.gelu.default, (x,), {"approximate": approximate})
    new.meta = dict(root.meta)
    root.replace_all_uses_with(new)
    _drop_dead(graph, chain)
    return True


def _einsum_is(node, spec: str) -> bool:
    """Whether `node` is einsum(spec) up to the renaming of its letters."""
    return _is_call(node, aten.einsum.default) and same_equation(node.args[0], spec)


def _swap12(node) -> Optional[fx.Node]:
    """x where `node` is x.transpose(1, 2) of a rank-4 x."""
    if _is_call(node, aten.transpose.int) and sorted(node.args[1:3]) == [1, 2] and \
            len(_shape(node.args[0]) or ()) == 4:
        return node.args[0]
    if _is_call(node, aten.permute.default) and list(node.args[1]) == [0, 2, 1, 3]:
        return node.args[0]
    return None


def _last_two_swapped(node) -> Optional[fx.Node]:
    if _is_call(node, aten.transpose.int) and sorted(a % 4 for a in node.args[1:3]) == [2, 3]:
        return node.args[0]
    return None


def _match_gdpa(graph: fx.Graph, act_node: fx.Node) -> bool:
    """act(scale * q k^T) v on [B, L, H, D] tensors, written with einsum or
    with matmuls of heads-first transposes (the HSTU form)."""
    activation = _activation(act_node)
    scaled, scale = act_node.args[0], 1.0
    chain = []
    if _is_call(scaled, aten.mul.Tensor) and isinstance(scaled.args[1], (int, float)):
        scores, scale = scaled.args[0], float(scaled.args[1])
        chain.append(scaled)
    elif _is_call(scaled, aten.div.Tensor) and isinstance(scaled.args[1], (int, float)) \
            and scaled.args[1] != 0:
        scores, scale = scaled.args[0], 1.0 / float(scaled.args[1])
        chain.append(scaled)
    else:
        scores = scaled
    if _einsum_is(scores, "bihd,bjhd->bhij"):
        q, k = scores.args[1]
    elif _is_call(scores, aten.matmul.default):
        q = _swap12(scores.args[0])
        kt = _last_two_swapped(scores.args[1])
        k = _swap12(kt) if kt is not None else None
        if q is None or k is None:
            return False
        chain = [scores.args[0], scores.args[1], kt] + chain  # kt: k.transpose(1, 2)
    else:
        return False
    chain = [scores] + chain
    out = _only_user(act_node)
    if _einsum_is(out, "bhij,bjhd->bihd") and out.args[1][0] is act_node:
        v, root = out.args[1][1], out
    elif _is_call(out, aten.matmul.default) and out.args[0] is act_node:
        v = _swap12(out.args[1])
        root = _only_user(out)
        if v is None or _swap12(root) is not out:
            return False
        chain += [out.args[1], out]
    else:
        return False
    if any(_only_user(n) is None for n in chain + [act_node]):
        return False
    shapes = [_shape(t) for t in (q, k, v)]
    if any(s is None or len(s) != 4 for s in shapes) or _dtype(root) != _dtype(q):
        return False
    _replace(graph, root, ops.gdpa, (q, k, v, activation, scale), act_node)
    _drop_dead(graph, chain + [act_node, out, root])
    return True


def _rotate_half(node, of) -> bool:
    """Whether `node` is Hugging Face's rotate_half(of): cat((-of[..., h:],
    of[..., :h]), -1) with h half of of's last dimension."""
    shape = _shape(of)
    if not (_is_call(node, aten.cat.default) and len(node.args[0]) == 2 and shape and
            _normalized_dim(_arg(node, 1, "dim", 0), len(shape)) == len(shape) - 1 and
            shape[-1] % 2 == 0):
        return False
    neg, low = node.args[0]
    d = shape[-1]
    return _is_call(neg, aten.neg.default) and \
        _last_dim_slice(neg.args[0], of) == (d // 2, d) and _last_dim_slice(low, of) == (0, d // 2)


def _heads_first(node):
    """(x, view) where `node` is transpose(view(x, [B, L, H, D]), 1, 2) of a
    [B, L, H x D] x (a projection's output as attention takes it), else
    None."""
    if not (_is_call(node, aten.transpose.int) and sorted(node.args[1:3]) == [1, 2]):
        return None
    view = node.args[0]
    x = _heads_last(view)
    return (x, view) if x is not None else None


def _unsqueezed_table(node, positions: int):
    """The [B or 1, L, D] table t where `node` is t.unsqueeze(1) (broadcast
    over the heads of a [B, H, L, D] q), else None."""
    if not (_is_call(node, aten.unsqueeze.default) and node.args[1] == 1):
        return None
    table = node.args[0]
    shape = _shape(table)
    return table if shape and len(shape) == 3 and shape[1] == positions else None


def _rotary_part(side, heads):
    """(q, R, cut) where `side`, a factor of a rope's `q * cos`, is q itself
    (R = D, cut None) or its first R columns, cut = q[..., :R] (GPT-NeoX's,
    Phi's, GPT-J's partial rotary; export's alias of q where R = D, Phi-3's
    full rotary, whose empty q[..., D:] is still concatenated), q a heads
    view of a projection's output (`heads`: _heads_first, Hugging Face's
    [B, H, L, D], or _heads_last, GPT-J's [B, L, H, D]); else None."""
    if heads(side) is not None:
        return side, _shape(side)[-1], None
    if not (_is_call(side, aten.slice.Tensor, aten.alias.default) and
            isinstance(side.args[0], fx.Node) and heads(side.args[0]) is not None):
        return None
    q, d = side.args[0], _shape(side.args[0])[-1]
    if _is_call(side, aten.alias.default):
        return q, d, side
    bounds = _last_dim_slice(side, q)
    if bounds is None or bounds[0] != 0 or not 0 < bounds[1] < d:
        return None
    return q, bounds[1], side


def _rope_products(add):
    """(first, second, side, table) for each way `add` reads as the sum of
    two products, first = side * table (a rope's `q * cos`, the other its
    turned q times sin): both orders of the sum and of first's factors."""
    if not (_is_call(add, aten.add.Tensor) and len(add.args) == 2 and not add.kwargs):
        return
    for first, second in (add.args, add.args[::-1]):
        if _is_call(first, aten.mul.Tensor) and _is_call(second, aten.mul.Tensor):
            for side, table in (first.args, first.args[::-1]):
                yield first, second, side, table


def _whole_head(add, q, cut, r: int, d: int):
    """(root, rest): the node that holds the rotated head, where `add` is
    the rotation of `cut` = q[..., :R] (or of q itself, cut None): add
    itself (rest None), or cat([add, q[..., R:]], -1) (rest, q's other
    reader); else None."""
    if cut is None:
        return add, None
    root = _only_user(add)
    if not (_is_call(root, aten.cat.default) and len(root.args[0]) == 2 and
            root.args[0][0] is add and _normalized_dim(_arg(root, 1, "dim", 0), 4) == 3):
        return None
    rest = root.args[0][1]
    if _last_dim_slice(rest, q) != (r, d) or _only_user(rest) is not root or \
            set(_users(q)) != {cut, rest}:
        return None
    return root, rest


def _match_rope(graph: fx.Graph, add: fx.Node) -> bool:
    """Hugging Face's apply_rotary_pos_emb of one of q, k:
    `q * cos + rotate_half(q) * sin`, q = transpose(view(x, [B, L, H, D]), 1,
    2) and cos, sin [B or 1, L, D] unsqueezed over the heads, becomes
    ops.rope of x [B, L, H x D] (so that it rides in the projection's
    partition, and in its GEMM's epilogue after fusion-fuse),
    viewed and transposed as before. Partial rotary (GPT-NeoX, Phi): the
    form on q[..., :R] with tables [B or 1, L, R], concatenated with
    q[..., R:]."""
    for first, second, side, cos_u in _rope_products(add):
        part = _rotary_part(side, _heads_first)
        if part is None:
            continue
        q, r, cut = part
        x, view = _heads_first(q)
        positions, d = _shape(q)[2], _shape(q)[3]
        cos = _unsqueezed_table(cos_u, positions)
        whole = _whole_head(add, q, cut, r, d)
        if whole is None:
            continue
        root, rest = whole
        for turned, sin_u in (second.args, second.args[::-1]):
            sin = _unsqueezed_table(sin_u, positions)
            if cos is None or sin is None or not _rotate_half(turned, side) or \
                    _shape(cos) != _shape(sin) or _shape(cos)[-1] != r or \
                    _shape(cos)[0] not in (1, _shape(x)[0]):
                continue
            if len({_dtype(n) for n in (x, cos, sin, add)}) != 1:
                continue
            neg, low = turned.args[0]
            if any(_only_user(n) is None for n in (first, second, turned, neg, low,
                                                 neg.args[0])):
                continue
            with graph.inserting_before(root):
                rope = graph.call_function(ops.rope, (x, cos, sin, d, False))
                back = graph.call_function(aten.view.default, (rope, list(_shape(view))))
                heads_first = graph.call_function(aten.transpose.int, (back, 1, 2))
            rope.meta["val"], back.meta["val"] = _val(x), _val(view)
            heads_first.meta["val"] = _val(q)
            for new in (rope, back, heads_first):
                if "stack_trace" in add.meta:
                    new.meta["stack_trace"] = add.meta["stack_trace"]
            root.replace_all_uses_with(heads_first)
            _drop_dead(graph, [root, add, first, second, turned, neg, neg.args[0], low,
                               rest, cut, q, view, cos_u, sin_u])
            return True
    return False


def _last_dim_every_other(node, of) -> Optional[int]:
    """The start (0 or 1) where `node` is of[..., start::2] along the last
    dimension, else None."""
    shape = _shape(of)
    if not (_is_call(node, aten.slice.Tensor) and node.args[0] is of and shape and
            isinstance(shape[-1], int) and shape[-1] % 2 == 0):
        return None
    if _normalized_dim(_arg(node, 1, "dim", 0), len(shape)) != len(shape) - 1 or \
            _arg(node, 4, "step", 1) != 2:
        return None
    start, stop = _arg(node, 2, "start", None), _arg(node, 3, "end", None)
    start = 0 if start is None else start
    if start not in (0, 1) or not (stop is None or (isinstance(stop, int) and
                                                    stop >= shape[-1])):
        return None
    return start


def _rotate_every_two(node, of) -> bool:
    """Whether `node` is GPT-J's rotate_every_two(of): stack((-of[..., 1::2],
    of[..., ::2]), -1).flatten(-2)."""
    if not (_is_call(node, aten.flatten.using_ints) and _shape(node) == _shape(of)):
        return False
    stack = node.args[0]
    rank = len(_shape(of) or ())
    if not (_is_call(stack, aten.stack.default) and len(stack.args[0]) == 2 and
            _normalized_dim(_arg(stack, 1, "dim", 0), rank + 1) == rank and
            _normalized_dim(_arg(node, 1, "start_dim", 0), rank + 1) == rank - 1 and
            _normalized_dim(_arg(node, 2, "end_dim", -1), rank + 1) == rank):
        return False
    neg, even = stack.args[0]
    return _is_call(neg, aten.neg.default) and \
        _last_dim_every_other(neg.args[0], of) == 1 and _last_dim_every_other(even, of) == 0


def _pairs_table(node, positions: int):
    """The [B or 1, L, R/2] table t where `node` is GPT-J's
    repeat_interleave(t[:, :, None, :], 2, 3) (each angle for both columns
    of its pair, broadcast over the heads of a [B, L, H, R] q), else None."""
    if not (_is_call(node, aten.repeat_interleave.self_int) and
            tuple(node.args[1:3]) == (2, 3) and not node.kwargs):
        return None
    unsqueezed = node.args[0]
    if not (_is_call(unsqueezed, aten.unsqueeze.default) and unsqueezed.args[1] == 2):
        return None
    shape = _shape(unsqueezed.args[0])
    return unsqueezed.args[0] if shape and len(shape) == 3 and shape[1] == positions else None


def _repeated_pairs(graph: fx.Graph, table: fx.Node) -> fx.Node:
    """repeat_interleave(table, 2, -1): GPT-J's [B or 1, L, R / 2] angles
    as the [B or 1, L, R] table of fusion.rope's pairs, in PyTorch, made
    once per table (q's and k's ropes read the same)."""
    for user in table.users:
        if _is_call(user, aten.repeat_interleave.self_int) and tuple(user.args[1:]) == (2, 2):
            return user
    with graph.inserting_after(table):
        pairs = graph.call_function(aten.repeat_interleave.self_int, (table, 2, 2))
    pairs.meta["val"] = torch.repeat_interleave(_val(table), 2, 2)
    if "stack_trace" in table.meta:
        pairs.meta["stack_trace"] = table.meta["stack_trace"]
    return pairs


def _heads_last(node):
    """x where `node` is view(x, [B, L, H, D]) of a [B, L, H x D] x (GPT-J's
    q before its heads' transpose), else None."""
    if not _is_call(node, aten.view.default, aten.reshape.default, aten._unsafe_view.default):
        return None
    x = node.args[0]
    xs, vs = _shape(x), _shape(node)
    if not xs or not vs or len(xs) != 3 or len(vs) != 4 or xs[:2] != vs[:2] or \
            vs[2] * vs[3] != xs[2]:
        return None
    return x


def _match_rope_pairs(graph: fx.Graph, add: fx.Node) -> bool:
    """GPT-J's apply_rotary_pos_emb: `q * cos + rotate_every_two(q) * sin` on
    q = view(x, [B, L, H, D]) (or its first R columns, concatenated with the
    rest), cos and sin [B or 1, L, R / 2] each repeated for both columns of
    a pair, becomes ops.rope(x, ..., interleaved) of x [B, L, H x D] with
    the repeated tables [B or 1, L, R] (computed in PyTorch), viewed as
    before."""
    for first, second, side, cos_r in _rope_products(add):
        part = _rotary_part(side, _heads_last)
        if part is None:
            continue
        q, r, cut = part
        x = _heads_last(q)
        d, positions = _shape(q)[3], _shape(q)[1]
        whole = _whole_head(add, q, cut, r, d)
        cos = _pairs_table(cos_r, positions)
        if whole is None or cos is None:
            continue
        root, rest = whole
        for turned, sin_r in (second.args, second.args[::-1]):
            sin = _pairs_table(sin_r, positions)
            if sin is None or not _rotate_every_two(turned, side) or \
                    _shape(cos) != _shape(sin) or 2 * _shape(cos)[-1] != r or \
                    _shape(cos)[0] not in (1, _shape(x)[0]):
                continue
            if len({_dtype(n) for n in (x, cos, sin, add)}) != 1:
                continue
            stack = turned.args[0]
            neg, even = stack.args[0]
            if any(_only_user(n) is None for n in (first, second, turned, stack, neg,
                                                 even, neg.args[0])):
                continue
            tables = [_repeated_pairs(graph, t) for t in (cos, sin)]
            with graph.inserting_before(root):
                rope = graph.call_function(ops.rope, (x, *tables, d, True))
                back = graph.call_function(aten.view.default, (rope, list(_shape(q))))
            rope.meta["val"], back.meta["val"] = _val(x), _val(q)
            for new in (rope, back):
                if "stack_trace" in add.meta:
                    new.meta["stack_trace"] = add.meta["stack_trace"]
            root.replace_all_uses_with(back)
            _drop_dead(graph, [root, add, first, second, turned, stack, neg, even,
                               neg.args[0], rest, cut, q, cos_r, sin_r, cos_r.args[0],
                               sin_r.args[0]])
            return True
    return False


def _feature_views(value: fx.Node):
    """(views, end): the chain of views of `value` that keep its features
    dimension (AOTAutograd's [tokens, N] back to [b, s, N]), each the only
    reader of the one before, and the last value of the chain."""
    from . import support
    chain = []
    while True:
        view = _only_user(value)
        if not (_is_call(view, *_FEATURE_VIEWS) and view.args[0] is value and
                len(view.args) == 2 and not view.kwargs and support._keeps_features(view)):
            return chain, value
        chain.append(view)
        value = view


def _projection_parts(gemm: fx.Node):
    """How a fused projection's [..., N] output is cut, where it is:
    ("rows", views, pieces) with its features cut into pieces [start, stop)
    (Phi-3's qkv_proj: q, k and v slices), or ("heads", views, pieces) with it
    viewed [B, L, G, P], transposed to [B, G, L, P] and each group's P
    columns cut alike (GPT-NeoX's query_key_value: per head q, k, v);
    pieces from _last_dim_pieces, views the feature views before the cut
    (with the "heads" form, the [B, L, G, P] view and the transpose last).
    Else None."""
    views, value = _feature_views(gemm)
    pieces = _last_dim_pieces(value)
    if pieces is not None and len(pieces) > 1:
        return "rows", views, pieces
    heads = _only_user(value)
    shape = _shape(value)
    if not (_is_call(heads, *_FEATURE_VIEWS) and heads.args[0] is value and shape and
            len(shape) == 3):
        return None
    grouped = _shape(heads)
    turned = _only_user(heads)
    if not (grouped and len(grouped) == 4 and tuple(grouped[:2]) == shape[:2] and
            _is_call(turned, aten.transpose.int) and sorted(turned.args[1:3]) == [1, 2]):
        return None
    pieces = _last_dim_pieces(turned)
    if pieces is None or len(pieces) < 2:
        return None
    return "heads", views + [heads, turned], pieces


def _feeds_rope(piece: fx.Node) -> bool:
    """Whether `piece` (a fused projection's q or k, [B, H, L, D] or the
    [B, L, H x D] it is viewed from) is read as apply_rotary_pos_emb reads
    its q: multiplied by a table unsqueezed over the heads, whole or its
    first columns."""
    q = piece
    if len(_shape(q) or ()) != 4:
        view = _only_user(piece)
        q = _only_user(view) if view is not None else None
        if q is None or _heads_first(q) is None:
            return False
    positions = _shape(q)[2]
    for user in _users(q):
        sides = [user] + ([u for u in _users(user)]
                          if _is_call(user, aten.slice.Tensor, aten.alias.default) else [])
        for side in sides:
            if _is_call(side, aten.mul.Tensor) and any(
                    _unsqueezed_table(a, positions) is not None for a in side.args):
                return True
    return False


def _split_projection(graph: fx.Graph, gemm: fx.Node) -> bool:
    """A fused projection whose q and k take a rotary embedding
    (_projection_parts, _feeds_rope) becomes one linear a piece over the
    weight's rows of that piece, so that each rope can ride in its own
    GEMM's epilogue (a rope covers every head of its input): Phi-3's
    contiguous rows are a view of the weight (aten.slice, free); GPT-NeoX's
    rows of each head's q, k or v part are gathered in PyTorch (ops.head_rows:
    a copy of the weight, kept between inference calls while the weight is
    unchanged; the partition's input).
    The bias is cut alike; the views after the cut are repeated on each."""
    from . import support
    w = gemm.args[1]
    if not isinstance(w, fx.Node) or len(_shape(w) or ()) != 2 or \
            support.reason(gemm) is not None:
        return False
    parts = _projection_parts(gemm)
    if parts is None or not any(_feeds_rope(piece) for piece, _, _ in parts[2]):
        return False
    form, views, pieces = parts
    if form == "rows":
        _linears_over_rows(graph, gemm, pieces, views, "qkv", lambda view, width: width)
        return True
    heads = views[-2]  # [B, L, G, P], then the transpose
    groups = tuple(_shape(heads)[2:])
    # The features: the piece's width of each group in the heads' view, of
    # every group before it.
    _linears_over_rows(graph, gemm, pieces, views, "qkv",
                       lambda view, width: width if view is heads else width * groups[0],
                       groups)
    return True


def _functional_adds(graph: fx.Graph) -> None:
    """`aten.add_(a, b)` (`mlp_output += attention_output`, Falcon's parallel
    residual) as `aten.add(a, b)` where a is an intermediate that nothing
    else reads: the in-place update is then the out-of-place sum, which the
    partitioner and the residual folds take."""
    for node in list(graph.nodes):
        if not _is_call(node, aten.add_.Tensor) or node.kwargs:
            continue
        a = node.args[0]
        if not isinstance(a, fx.Node) or a.op != "call_function" or len(a.users) != 1 or \
                _shape(a) != _shape(node):
            continue
        with graph.inserting_before(node):
            new = graph.call_function(aten.add.Tensor, tuple(node.args))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)


def _drop_identities(graph: fx.Graph) -> None:
    for node in list(graph.nodes):
        source = None
        if _is_call(node, aten.dropout.default) and (node.args[2] is False or node.args[1] == 0):
            source = node.args[0]
        elif _is_call(node, aten.clone.default) and not node.kwargs:
            source = node.args[0]
        elif _cast_target(node) is not None and _cast_target(node) == _dtype(node.args[0]):
            source = node.args[0]
        if source is not None and _shape(source) == _shape(node):
            node.replace_all_uses_with(source)
            _drop_dead(graph, [node])


def _drop_checks_of_recognized(graph: fx.Graph) -> None:
    """Erases export's metadata checks of the values the recognized ops
    compute (the `.to(float32)` of Hugging Face's RMSNorm leaves one on the
    norm's input, a GEMM's output): the dialect op's result has the checked
    dtype and device by construction, and a check outside a partition would
    make the partition store that value for it alone (a norm epilogue's
    save_norm_input: one more [tokens, N] write per call)."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _CHECKS and node.args and \
                _is_call(node.args[0], *ops.FRONTEND_OPS) and not node.users:
            graph.erase_node(node)


def recognize_ropes(gm: fx.GraphModule) -> int:
    """Rewrites the rotary embeddings (Hugging Face's apply_rotary_pos_emb)
    of projections' outputs into ops.rope; returns how many. Run after
    support.mark_head_norms, which folds a per-head norm's output back to
    [B, L, H x D] and views it per head again: Qwen3's rope after its q_norm
    is then the same form as Llama's after q_proj."""
    graph = gm.graph
    found = 0
    for node in list(graph.nodes):
        if node.graph is graph and _is_call(node, ops.linear):
            _split_projection(graph, node)
    for node in list(graph.nodes):
        if node.graph is graph and (_match_rope(graph, node) or
                                    _match_rope_pairs(graph, node)):
            found += 1
    _drop_checks_of_recognized(graph)
    graph.lint()
    gm.recompile()
    return found


def recognize(gm: fx.GraphModule) -> Dict[str, int]:
    """Rewrites `gm`'s graph in place; returns how many of each form it found."""
    graph = gm.graph
    found = {"rms_norm": 0, "layer_norm": 0, "linear": 0, "gdpa": 0}
    _drop_identities(graph)
    _functional_adds(graph)
    for node in list(graph.nodes):
        if node.graph is not graph:
            continue
        if _is_call(node, aten.rsqrt.default) and _match_rms_norm(graph, node):
            found["rms_norm"] += 1
        elif _is_call(node, aten.rsqrt.default) and _match_manual_layer_norm(graph, node):
            found["layer_norm"] += 1
        elif _is_call(node, aten.rms_norm.default) if hasattr(aten, "rms_norm") else False:
            x, shape = node.args[0], _shape(node.args[0])
            weight = node.args[2] if len(node.args) > 2 else None
            eps = node.args[3] if len(node.args) > 3 else node.kwargs.get("eps")
            if eps is None and _dtype(x) in (torch.bfloat16, torch.float16, torch.float32):
                eps = torch.finfo(torch.float32).eps  # PyTorch's default: its math type's
            if shape and len(shape) >= 2 and list(node.args[1]) == [shape[-1]] and eps is not None:
                _replace(graph, node, ops.rms_norm, (x, weight, float(eps), False, False), node)
                graph.erase_node(node)
                found["rms_norm"] += 1
        elif _is_call(node, aten.layer_norm.default, aten.native_layer_norm.default) and \
                _match_layer_norm(graph, node):
            found["layer_norm"] += 1
        elif _is_call(node, aten.linear.default, aten.addmm.default, aten.mm.default,
                      aten.matmul.default) and _match_linear(graph, node):
            found["linear"] += 1
        elif _activation(node) is not None and _match_gdpa(graph, node):
            found["gdpa"] += 1
        elif _is_call(node, GDPA):  # kept whole through AOTAutograd (dynamo_forms)
            _replace(graph, node, ops.gdpa, tuple(node.args), node)
            graph.erase_node(node)
            found["gdpa"] += 1
    # A fused gate and up projection cut in halves (Phi-3's gate_up_proj):
    # the gated MLP's two linears.
    found["gate_up"] = 0
    for node in list(graph.nodes):
        if node.graph is graph and _is_call(node, ops.linear) and _match_gate_up(graph, node):
            found["gate_up"] += 1
    # Activations stay the ATen ops they are (aten.silu, aten.gelu, aten.relu:
    # support.activation_kind); a GELU written out becomes aten.gelu where its
    # input is a GEMM's, recognized above.
    found["gelu"] = 0
    for node in list(graph.nodes):
        if node.graph is graph and _is_call(node, aten.tanh.default, aten.erf.default) and \
                _match_written_gelu(graph, node):
            found["gelu"] += 1
    _drop_checks_of_recognized(graph)
    graph.lint()
    gm.recompile()
    return found
