"""Which nodes of a recognized graph the dialect holds, and why not the others.

After `patterns.recognize`, a node is supported when it is one of `ops.py`'s
functions, a tensor `add`/`mul` the dialect's broadcasting ops hold, an
activation (silu, gelu, relu) of a GEMM's output, or a view that only
regroups the leading (token) dimensions, with float dtypes the kernels
take. Everything else stays in PyTorch; `reason(node)` says why, for
`explain`.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.fx as fx
from torch.fx.passes.operator_support import OperatorSupportBase

from . import ops

aten = torch.ops.aten

FLOAT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
MLIR_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
BINARY = {aten.add.Tensor: "add", aten.mul.Tensor: "mul"}
VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default,
         aten.flatten.using_ints, aten.unflatten.int)


# ATen's activations that `fusion.activation` computes (in float32, rounded
# once to the element type, as PyTorch's kernels for 16-bit tensors do).
_ACTIVATION_OPS = {aten.silu.default: "silu", aten.relu.default: "relu"}


def activation_kind(node) -> Optional[str]:
    """The `#fusion.activation` kind of an activation node (aten.silu,
    aten.relu, aten.gelu with approximate "none" or "tanh"), else None."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return None
    if node.target in _ACTIVATION_OPS:
        return _ACTIVATION_OPS[node.target]
    if node.target is aten.gelu.default:
        approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    return None


# An activation marked so stays in PyTorch: a partition's training pieces
# (the dialect has no op for an activation's gradient; see
# fusion_compiler._gradients_in_pieces).
TRAINED_IN_PYTORCH = "fusion_trained_in_pytorch"


# The rows [start, stop) of a fused gate_up weight (patterns._match_gate_up:
# Phi-3's gate_up_proj as the gated MLP's two linears, a fused qkv projection
# whose q and k take a rope as one linear each): aten.slice of the parameter
# along its rows, a view that stays in PyTorch (free) and is the partition's
# input; or, where each head's q, k and v lie side by side (GPT-NeoX), the
# ops.head_rows that gathers a part's rows. The value is (start, stop, the
# weight's name, the number of heads gathered from or None):
# patterns._linears_over_rows.
WEIGHT_ROWS = "fusion_weight_rows"


def _tensor(node) -> Optional[torch.Tensor]:
    v = node.meta.get("val") if isinstance(node, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _static(t: torch.Tensor) -> bool:
    return all(isinstance(d, int) for d in t.shape)


def binary_operands(node: fx.Node):
    """(activation, other) of a supported add/mul: the operand with the
    token dimensions first (add and mul commute), or None."""
    if len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
        return None
    a, b = (_tensor(x) for x in node.args)
    if a is None or b is None:
        return None
    if b.dim() > a.dim():
        return node.args[1], node.args[0]
    return node.args[0], node.args[1]


_GEMMS = (ops.linear, ops.matmul)
_NORMS = (ops.rms_norm, ops.layer_norm)


def _keeps_features(view: fx.Node) -> bool:
    """Whether a view keeps the features dimension: [tokens..., n] to
    [tokens'..., n], static (a GEMM's [tokens, n] output back to [b, s, n])."""
    src, out = _tensor(view.args[0]), _tensor(view)
    return (src is not None and out is not None and src.dim() >= 2 and out.dim() >= 2 and
            _static(src) and _static(out) and src.shape[-1] == out.shape[-1])


def _through_token_views(x):
    """x, or the value a chain of views keeping the features dimension (GPT-2's
    Conv1D output) shows."""
    while isinstance(x, fx.Node) and x.op == "call_function" and x.target in VIEWS and \
            _keeps_features(x):
        x = x.args[0]
    return x


def _gemm_sum(x) -> bool:
    """Whether x is an add, used once, of two GEMMs' outputs (through views
    that keep the features dimension): a parallel residual's projections
    summed first, GPT-NeoX's and GPT-J's mlp_output + attn_output, to which
    the residual is added next (fusion-plan-kernels reassociates the sums
    so that each GEMM takes a residual)."""
    x = _through_token_views(x)
    return (isinstance(x, fx.Node) and x.op == "call_function" and
            BINARY.get(x.target) == "add" and len(x.users) == 1 and
            all(isinstance(y, fx.Node) and y.target in _GEMMS
                for y in map(_through_token_views, x.args[:2])))


def _gemm_norm(x) -> bool:
    """Whether x is a norm, used once, of a GEMM's output (through views
    that keep the features dimension): the sandwich norm after a projection
    (OLMo 2's and Gemma 2 / 3's post_attention_layernorm), whose output the
    residual stream adds next (fusion-plan-kernels folds that add into the
    GEMM's norm epilogue as its post_residual)."""
    x = _through_token_views(x)
    return (isinstance(x, fx.Node) and x.op == "call_function" and x.target in _NORMS and
            len(x.users) == 1 and isinstance(_through_token_views(x.args[0]), fx.Node) and
            _through_token_views(x.args[0]).target in _GEMMS)


def _users(node: fx.Node):
    from .patterns import _CHECKS
    return [u for u in node.users if u.target not in _CHECKS]


def _gemm_activation(node: fx.Node) -> bool:
    """Whether the activation `node` reads a supported GEMM's output (through
    views that keep the features dimension) that nothing else reads: the
    GEMM's epilogue then computes it (fusion-fuse's activation epilogue, or
    the gated product's one GEMM) and the GEMM's own output is never
    stored."""
    user, value = node, node.args[0]
    while isinstance(value, fx.Node) and _users(value) == [user]:
        if value.target in _GEMMS:
            return reason(value) is None
        if value.op != "call_function" or value.target not in VIEWS or \
                not _keeps_features(value):
            return False
        user, value = value, value.args[0]
    return False


def _gated(a, b) -> bool:
    """Whether a * b is the gated MLP's product act(gate(x)) * up(x) (either
    order, through views that keep the features dimension): a supported
    activation of a GEMM's output times another GEMM's output, which
    fusion-fuse makes one GEMM over both weights (fused_matmul's `up`)."""
    for act, up in ((a, b), (b, a)):
        act, up = _through_token_views(act), _through_token_views(up)
        if activation_kind(act) is not None and reason(act) is None and \
                isinstance(up, fx.Node) and up.target in _GEMMS and reason(up) is None:
            return True
    return False


def _absorbable(node: fx.Node, pair) -> bool:
    """Whether the fusion passes can take an add or mul into a kernel: an
    add of a GEMM's output (its bias or a residual, in the GEMM's epilogue;
    through views that keep the features dimension), of two GEMMs' sum (a
    parallel residual, _gemm_sum), of a GEMM's norm (a sandwich norm's
    residual stream, _gemm_norm) or into a norm's input
    (the residual sum of an epilogue norm); a mul of a norm's output by a
    vector (its weight), or the gated MLP's product (_gated). Any other
    element-wise op is better left where it can fuse with its PyTorch
    neighbours."""
    a, b = pair
    if BINARY[node.target] == "add":
        if any(isinstance(x, fx.Node) and x.target in _GEMMS
               for x in map(_through_token_views, (a, b))):
            return True
        if any(_gemm_sum(x) or _gemm_norm(x) for x in (a, b)):
            return True
        return any(u.target in _NORMS and u.args[0] is node for u in node.users)
    if isinstance(a, fx.Node) and a.target in _NORMS and _tensor(b) is not None and \
            _tensor(b).dim() == 1:
        return True
    return _tensor(a) is not None and _tensor(b) is not None and \
        tuple(_tensor(a).shape) == tuple(_tensor(b).shape) and _gated(a, b)


# An attention block (FlashNormAttention's form: norms over all heads of a
# token around a gdpa) holds tensors in two layouts, [B, L, H, D] for the
# attention and [B, L, H * D] for the norms, joined by views that fold or
# unfold the heads. `mark_attention_blocks` marks such a group with its
# token count B * L; the group is partitioned on its own and written with
# static shapes, so that fusion-fuse sees the chain whole.
BLOCK = "fusion_attention_block"


def heads_view(node: fx.Node) -> Optional[int]:
    """The tokens of a view that folds [..., H, D] into [..., H * D] or
    unfolds it back, keeping every leading dimension; else None."""
    if node.op != "call_function" or node.target not in VIEWS:
        return None
    src, out = _tensor(node.args[0]), _tensor(node)
    if src is None or out is None or not _static(src) or not _static(out):
        return None
    wide, narrow = (src, out) if src.dim() == out.dim() + 1 else (out, src)
    if wide.dim() != narrow.dim() + 1 or narrow.dim() < 2 or \
            tuple(wide.shape[:-2]) != tuple(narrow.shape[:-1]) or \
            wide.shape[-2] * wide.shape[-1] != narrow.shape[-1]:
        return None
    return narrow.numel() // narrow.shape[-1] if narrow.shape[-1] else None


def mark_attention_blocks(graph: fx.Graph) -> None:
    """Marks (node.meta[BLOCK] = tokens) each gdpa that a heads view joins to
    a norm over all heads of a token, with the nodes between: heads views,
    those norms, and adds and muls of equal shapes. From the gdpa the walk
    follows its query and its users only (k and v are inputs of the block)."""
    for gdpa in [n for n in graph.nodes if n.target is ops.gdpa]:
        q = _tensor(gdpa.args[0])
        if q is None or q.dim() != 4 or not _static(q):
            continue
        tokens = q.shape[0] * q.shape[1]
        group, todo = {gdpa}, [gdpa.args[0], *gdpa.users]
        while todo:
            node = todo.pop()
            if not isinstance(node, fx.Node) or node in group or node.op != "call_function":
                continue
            t = _tensor(node)
            if heads_view(node) == tokens:
                pass
            elif node.target in _NORMS and rows(node) == tokens:
                pass
            elif node.target in BINARY and t is not None and t.dim() >= 3 and \
                    t.shape[0] * t.shape[1] == tokens and all(
                        _tensor(a) is not None and tuple(_tensor(a).shape) == tuple(t.shape)
                        for a in node.args[:2]):
                pass
            else:
                continue
            group.add(node)
            todo += [a for a in node.args[:1 if node.target in _NORMS else 2]
                     if isinstance(a, fx.Node)]
            todo += list(node.users)
        if any(n.target in _NORMS for n in group):
            for n in group:
                n.meta[BLOCK] = tokens


# A per-head norm after a projection (Qwen3's and Gemma 3's q_norm / k_norm:
# the GEMM's [..., H * D] viewed as [..., H, D], a norm over D): its rows are
# H times the GEMM's. `mark_head_norms` marks the heads view and the norm
# with the GEMM's token count, so that they join its partition, and adds the
# view folding the norm's output back to [..., H * D] (in the partition: its
# output keeps the libraries' [tokens, features] form) and the one
# unfolding it again for the model (in PyTorch, free). emit.py writes them
# as tensor.expand_shape / collapse_shape, the form fusion-fuse takes into
# the GEMM's epilogue (norm_group_size).
HEADS = "fusion_heads_norm"
UNFOLDED = "fusion_heads_unfolded"  # the view unfolding the norm's output again


def _unfolded_tokens(view: fx.Node) -> Optional[int]:
    """The tokens of a view of [tokens..., H * D] as [tokens..., H, D] (the
    heads last but one, any leading dims), else None."""
    if view.op != "call_function" or view.target not in VIEWS or not view.args:
        return None
    src, out = _tensor(view.args[0]), _tensor(view)
    if src is None or out is None or not _static(src) or not _static(out) or \
            src.dim() < 2 or out.dim() < 3 or out.shape[-1] == 0 or \
            out.shape[-2] * out.shape[-1] != src.shape[-1]:
        return None
    return src.numel() // src.shape[-1]


def _leading_swap(node) -> bool:
    """A transpose or permute that keeps the last dimension in place (Gemma
    3's .transpose(1, 2) of the heads before its q_norm)."""
    t = _tensor(node) if isinstance(node, fx.Node) else None
    if t is None or node.op != "call_function":
        return False
    if node.target is aten.transpose.int:
        return all((d % t.dim()) != t.dim() - 1 for d in node.args[1:3])
    if node.target is aten.permute.default:
        dims = [d % t.dim() for d in node.args[1]]
        return dims[-1] == t.dim() - 1
    return False


def mark_head_norms(graph: fx.Graph) -> None:
    """Marks (node.meta[HEADS] = tokens) each norm over the heads view of a
    supported value computed with `tokens` rows (a GEMM's output, say) and
    that view, and folds the norm's output back (see HEADS). A norm of that
    view transposed (the heads before the tokens, the last dimension in
    place) is moved before the transpose: a norm over the last dimension
    commutes with it. Attention blocks (`mark_attention_blocks`, run first)
    keep their own views."""
    from .patterns import _CHECKS

    def users(node):
        return [u for u in node.users if u.target not in _CHECKS]

    def drop_checks(node):
        for check in [u for u in node.users if u.target in _CHECKS]:
            graph.erase_node(check)  # export's metadata check of a value now inside

    for norm in [n for n in graph.nodes if n.op == "call_function" and n.target in _NORMS]:
        if BLOCK in norm.meta or reason(norm) is not None:
            continue
        view, swap = norm.args[0], None
        if _leading_swap(view) and users(view) == [norm]:
            view, swap = view.args[0], view
        if not isinstance(view, fx.Node) or BLOCK in view.meta:
            continue
        tokens = _unfolded_tokens(view)
        source = view.args[0] if tokens is not None else None
        if not isinstance(source, fx.Node) or BLOCK in source.meta or \
                not (is_compute(source) or source.target in VIEWS) or \
                reason(source) is not None or rows(source) != tokens:
            continue
        if users(view) != [swap or norm]:
            continue  # the heads view read elsewhere too
        out, heads = _tensor(norm), _tensor(view)
        if out is None or out.dim() != heads.dim():
            continue
        drop_checks(view)
        swap_trace = swap.meta.get("stack_trace") if swap is not None else None
        if swap is not None:
            drop_checks(swap)
            norm.replace_input_with(swap, view)
            graph.erase_node(swap)
            norm.meta["val"] = torch.empty_like(heads, dtype=out.dtype)
            norm.meta.pop("tensor_meta", None)  # of the transposed shape
        value = norm.meta["val"]
        flat_shape = [*value.shape[:-2], value.shape[-2] * value.shape[-1]]
        with graph.inserting_after(norm):
            flat = graph.call_function(aten.view.default, (norm, flat_shape))
        with graph.inserting_after(flat):
            back = graph.call_function(aten.view.default, (flat, list(value.shape)))
        last = back
        if swap is not None:
            with graph.inserting_after(back):
                last = graph.call_function(swap.target, (back, *swap.args[1:]))
        norm.replace_all_uses_with(last, delete_user_cb=lambda user: user is not flat)
        flat.meta["val"] = value.view(flat_shape)
        back.meta["val"] = flat.meta["val"].view(list(value.shape))
        for new in (flat, back):
            if "stack_trace" in norm.meta:
                new.meta["stack_trace"] = norm.meta["stack_trace"]
        if swap is not None:
            last.meta["val"] = out
            if swap_trace:
                last.meta["stack_trace"] = swap_trace
        for node in (view, norm, flat):
            node.meta[HEADS] = tokens
        back.meta[UNFOLDED] = True


def reason(node: fx.Node) -> Optional[str]:
    """None where the node is supported, else why it stays in PyTorch."""
    if node.op != "call_function":
        return "not an operation"
    if (BLOCK in node.meta or HEADS in node.meta) and node.target in VIEWS:
        return None  # a heads view inside an attention block or of a per-head norm
    out = _tensor(node)
    name = getattr(node.target, "__name__", str(node.target))
    if node.target is ops.rope and TRAINED_IN_PYTORCH in node.meta:
        return (f"{name}: its gradient (no dialect op for it) is PyTorch's, between the "
                f"partition's training pieces")
    if node.target in ops.FRONTEND_OPS:
        x = _tensor(node.args[0])
        tensors = [_tensor(a) for a in node.args[:3] if isinstance(a, fx.Node)]
        if any(t is None for t in tensors) or out is None:
            return f"{name}: operands without known shapes"
        if any(t.dtype not in FLOAT_DTYPES for t in tensors + [out]):
            return f"{name}: dtypes {[str(t.dtype) for t in tensors]}; the kernels take bf16, f16, f32"
        # A norm's parameters may be float32 beside a 16-bit input (Gemma's
        # RMSNorm weight 1 + w.float()): the op computes in float32 anyway.
        params_f32 = node.target in _NORMS and all(t.dtype == torch.float32
                                                    for t in tensors[1:])
        if len({t.dtype for t in ([x, out] if params_f32 else tensors + [out])}) != 1:
            return f"{name}: mixed dtypes {sorted({str(t.dtype) for t in tensors + [out]})}"
        if x.dim() < 2:
            return f"{name}: a rank-{x.dim()} input; expected [tokens..., features]"
        if not _static(x) or any(not _static(t) for t in tensors[1:]):
            return f"{name}: symbolic sizes"
        if node.target in (ops.linear, ops.matmul) and tensors[1].dim() != 2:
            return f"{name}: a rank-{tensors[1].dim()} weight"
        if node.target is ops.gdpa and any(t.dim() != 4 for t in tensors):
            return f"{name}: expected q, k, v as [batch, tokens, heads, dim]"
        return None
    kind = activation_kind(node)
    if kind is not None:
        x = _tensor(node.args[0])
        if x is None or out is None or out.dtype != x.dtype or x.dtype not in FLOAT_DTYPES:
            return f"{name}: dtype {getattr(x, 'dtype', None)}; the kernels take bf16, f16, f32"
        if x.dim() < 2 or not _static(x):
            return f"{name}: expected [tokens..., features] with static sizes"
        if TRAINED_IN_PYTORCH in node.meta:
            return (f"{name}: its gradient (no dialect op for it) is PyTorch's, between the "
                    f"partition's training pieces")
        if not _gemm_activation(node):
            return (f"{name}: nothing to fuse it into (a GEMM's output that only it reads: "
                    f"the GEMM's epilogue); PyTorch's kernel, or Inductor's fusion with its "
                    f"neighbours, serves it as well")
        return None
    if node.target in BINARY:
        pair = binary_operands(node)
        if pair is None:
            return f"{name}: not an element-wise op of two tensors"
        a, b = _tensor(pair[0]), _tensor(pair[1])
        if out is None or out.dtype != a.dtype or a.dtype not in FLOAT_DTYPES or \
                b.dtype not in FLOAT_DTYPES:
            return f"{name}: dtypes {a.dtype} and {b.dtype} (the result takes the first's)"
        if a.dim() < 2 or not _static(a) or not _static(b):
            return f"{name}: expected [tokens..., features] with static sizes"
        if tuple(b.shape) != tuple(a.shape) and tuple(b.shape) != (a.shape[-1],):
            return (f"{name}: shapes {list(a.shape)} and {list(b.shape)}; the dialect "
                    f"broadcasts a [features] vector or takes equal shapes")
        if BLOCK not in node.meta and not _absorbable(node, pair):
            return (f"{name}: nothing to fuse it into (a GEMM's bias or residual, a norm's "
                    f"input or weight, a gated MLP's act(gate) * up); PyTorch's kernel, or "
                    f"Inductor's fusion with its neighbours, serves it as well")
        return None
    if WEIGHT_ROWS in node.meta:
        start, stop, what, groups = node.meta[WEIGHT_ROWS]
        if groups:
            return (f"{name}: rows [{start}, {stop}) of each of the {groups} heads of a fused "
                    f"{what} weight, gathered in PyTorch as the partition's input (kept "
                    f"between inference calls while the weight is unchanged)")
        return (f"{name}: rows [{start}, {stop}) of a fused {what} weight, a view (free) "
                f"that the partition takes as its input")
    if node.target in VIEWS:
        if UNFOLDED in node.meta:
            return f"{name}: the per-head norm's output unfolded into heads again (a view)"
        if not _keeps_features(node):
            return f"{name}: a view that does not keep the features dimension"
        # A view of a computed value (a GEMM's [tokens, n] back to [b, s, n]);
        # a view of an input stays outside, where it costs nothing either.
        source = node.args[0]
        if not (isinstance(source, fx.Node) and is_compute(source) and reason(source) is None):
            return f"{name}: a view of a value computed outside"
        return None
    return f"{name}: no dialect op for it"


def is_compute(node: fx.Node) -> bool:
    """A node that computes (not a view): an op of ops.py, an add or a mul,
    an activation."""
    return node.target in ops.FRONTEND_OPS or node.target in BINARY or \
        activation_kind(node) is not None


def group(node: fx.Node):
    """The partitioning key of a node: ("block", tokens) inside an attention
    block (`mark_attention_blocks`), the GEMM's token count for a per-head
    norm and its views (`mark_head_norms`), else its row count."""
    if BLOCK in node.meta:
        return ("block", node.meta[BLOCK])
    return node.meta[HEADS] if HEADS in node.meta else rows(node)


def rows(node: fx.Node) -> Optional[int]:
    """The number of rows (tokens) of a node's tensor: its elements over its
    last dimension. A partition holds nodes of one row count: its
    activations flatten to [rows, features] alike."""
    t = _tensor(node)
    if t is None or t.dim() == 0 or not _static(t) or t.shape[-1] == 0:
        return None
    return t.numel() // t.shape[-1]


class FusionOperatorSupport(OperatorSupportBase):
    """The supported nodes of partitioning key `key` (`group`; all where
    None)."""

    def __init__(self, key=None):
        super().__init__()
        self.key = key

    def is_node_supported(self, submodules, node: fx.Node) -> bool:
        if reason(node) is not None:
            return False
        return self.key is None or group(node) == self.key
