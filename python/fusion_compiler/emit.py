"""Writes one partition of a recognized graph as a function of the dialect.

The function takes the partition's inputs and returns its outputs. Tensors
that carry tokens (activations: every tensor of rank 2 or more that is not a
weight) are passed flattened to [tokens, features] with a dynamic token
count, so one library serves every batch and sequence length; weights, norm
parameters and broadcast vectors keep their static shapes. Each op carries
the location of the model's source line that wrote it, so the passes'
remarks (`explain`) point at the Python model.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import torch
import torch.fx as fx

from . import ops
from .support import BINARY, MLIR_DTYPES, VIEWS, activation_kind, binary_operands

TARGET_ATTR = '#fusion.target<"{}">'


class EmitError(ValueError):
    """The partition cannot be written in the dialect (it stays in PyTorch)."""


@dataclass
class TensorArg:
    """One argument or result of an emitted function."""
    dtype: torch.dtype
    shape: Tuple[int, ...]   # as in the model (activations: before flattening)
    activation: bool         # passed as [tokens, features], tokens dynamic
    per_row: bool = False    # a norm's statistic over activations: [tokens] f32
    # An activation viewed as [tokens, H, D] (shape [..., H, D]), inside a
    # partition only: a per-head norm's input and output (support.HEADS).
    heads: bool = False
    # A rotary embedding's tables per position ([1, L, R], one for every
    # sequence): passed as [positions, R], positions dynamic (rows m mod
    # positions of the [tokens, features] activations); not a weight.
    table: bool = False

    @property
    def features(self) -> int:
        return self.shape[-1]

    @property
    def static(self) -> bool:
        """Neither an activation, a per-row statistic nor a table: the same
        shape every call (a module's parameter, outside attention
        partitions)."""
        return not self.activation and not self.per_row and not self.table

    def mlir_type(self) -> str:
        if self.per_row:
            return "tensor<?xf32>"
        row = self.shape[-2:] if self.heads else self.shape[-1:]
        dims = ["?", *map(str, row)] if self.activation or self.table \
            else [str(d) for d in self.shape]
        return f"tensor<{'x'.join(dims)}x{MLIR_DTYPES[self.dtype]}>"


@dataclass
class Program:
    name: str
    mlir: str                # what is compiled: no locations, so that the
                             # same layer at another source line (or on
                             # another machine) hits the same cached library
    inputs: List[TensorArg]
    outputs: List[TensorArg]
    single_output: bool
    ops: List[Tuple[str, str]] = field(default_factory=list)  # (op, source line)
    mlir_with_locations: str = ""  # the same with the model's source lines, for reports


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_TORCH_DIR = os.path.dirname(torch.__file__)
_OWN_DIR = os.path.dirname(__file__)


def source_line(node: fx.Node) -> Optional[Tuple[str, int]]:
    """The model's source line that wrote `node`: the innermost frame of its
    stack trace outside torch and this package."""
    trace = node.meta.get("stack_trace") or ""
    best = None
    for path, line, _ in _FRAME.findall(trace):
        if not (path.startswith(_TORCH_DIR) or path.startswith(_OWN_DIR)):
            best = (path, int(line))
    return best


def _loc(node: fx.Node) -> str:
    where = source_line(node)
    if where is None:
        return ""
    path = where[0].replace("\\", "\\\\").replace('"', '\\"')
    return f' loc("{path}":{where[1]}:0)'


def _tensor(node) -> torch.Tensor:
    v = node.meta.get("val")
    if not isinstance(v, torch.Tensor):
        raise EmitError(f"{node.name}: no tensor value known")
    return v


def _rope_tables(graph: fx.Graph) -> set:
    """The rotary embeddings' tables per position ([1, L, R], one for every
    sequence; tables per token are activations like x)."""
    tables = set()
    for node in graph.nodes:
        if node.target is ops.rope:
            x, cos, sin = node.args[:3]
            if _tensor(cos).shape[:-1].numel() != _tensor(x).shape[:-1].numel():
                tables.update((cos, sin))
    return tables


def _weights(graph: fx.Graph) -> set:
    """Nodes used as weights, norm parameters or broadcast vectors."""
    static = set()
    for node in graph.nodes:
        if node.target in (ops.linear, ops.matmul):
            static.update(a for a in node.args[1:3] if isinstance(a, fx.Node))
        elif node.target in (ops.rms_norm, ops.layer_norm):
            static.update(a for a in node.args[1:3] if isinstance(a, fx.Node))
        elif node.target is ops.gdpa:  # [B, L, H, D] as they are
            static.update(a for a in node.args[:3] if isinstance(a, fx.Node))
        elif node.target in BINARY:
            pair = binary_operands(node)
            if pair is not None and _tensor(pair[1]).dim() < _tensor(pair[0]).dim():
                static.add(pair[1])
    return static


def _statistics_type(x: TensorArg) -> str:
    """The type of a norm's per-row statistics over `x`."""
    return statistics_arg(x).mlir_type()


def statistics_arg(x: TensorArg) -> TensorArg:
    """A norm's per-row statistics (mean, rstd) over `x`: f32, one per row
    (over a per-head activation [tokens, H, D]: an activation [tokens, H])."""
    if x.heads:
        return TensorArg(torch.float32, tuple(x.shape[:-1]), True)
    if x.activation:
        return TensorArg(torch.float32, (int(torch.Size(x.shape[:-1]).numel()),), False, True)
    return TensorArg(torch.float32, tuple(x.shape[:-1]), False)


def _heads_reshape(result: str, source: str, src: TensorArg, out: TensorArg) -> str:
    """`tensor.collapse_shape` folding the heads of [..., H, D] into
    [..., H * D], or `tensor.expand_shape` unfolding them (static shapes)."""
    rank = min(len(src.shape), len(out.shape))
    groups = [f"[{i}]" for i in range(rank - 1)] + [f"[{rank - 1}, {rank}]"]
    reassociation = f"[{', '.join(groups)}]"
    if len(src.shape) == len(out.shape) + 1 and src.shape[:-2] == out.shape[:-1] and \
            src.shape[-2] * src.shape[-1] == out.shape[-1]:
        return (f"{result} = tensor.collapse_shape {source} {reassociation} : "
                f"{src.mlir_type()} into {out.mlir_type()}")
    if len(out.shape) == len(src.shape) + 1 and out.shape[:-2] == src.shape[:-1] and \
            out.shape[-2] * out.shape[-1] == src.shape[-1]:
        return (f"{result} = tensor.expand_shape {source} {reassociation} output_shape "
                f"[{', '.join(str(d) for d in out.shape)}] : {src.mlir_type()} into "
                f"{out.mlir_type()}")
    raise EmitError(f"a view from {list(src.shape)} to {list(out.shape)} inside an attention "
                    f"partition; only folding or unfolding the heads is written")


def per_head_view(result: str, source: str, src: TensorArg, out: TensorArg,
                  tokens: str) -> str:
    """An activation's per-head view, tokens dynamic: `tensor.expand_shape`
    of [?, H * D] into [?, H, D] (`tokens`: the SSA index of the token
    count) or `tensor.collapse_shape` back."""
    wide, flat = (out, src) if out.heads else (src, out)
    if not src.activation or not out.activation or src.heads == out.heads or \
            wide.shape[-2] * wide.shape[-1] != flat.shape[-1]:
        raise EmitError(f"a view from {list(src.shape)} to {list(out.shape)}: not the heads "
                        f"of a per-head norm unfolded or folded back")
    if out.heads:
        return (f"{result} = tensor.expand_shape {source} [[0], [1, 2]] output_shape "
                f"[{tokens}, {out.shape[-2]}, {out.shape[-1]}] : {src.mlir_type()} into "
                f"{out.mlir_type()}")
    return (f"{result} = tensor.collapse_shape {source} [[0], [1, 2]] : {src.mlir_type()} "
            f"into {out.mlir_type()}")


def view_arg(src: TensorArg, shape: Tuple[int, ...]) -> TensorArg:
    """The type of a view of `src` with model shape `shape`: an activation
    keeps its row ([features], or [H, D] per head), or unfolds [H * D] into
    heads, or folds them back (a per-head norm's views, support.HEADS)."""
    if not src.activation:
        return TensorArg(src.dtype, shape, False)
    row = tuple(src.shape[-2:]) if src.heads else tuple(src.shape[-1:])
    if len(shape) > len(row) and tuple(shape[-len(row):]) == row:
        return TensorArg(src.dtype, shape, True, heads=src.heads)
    if not src.heads and len(shape) >= 3 and shape[-2] * shape[-1] == src.shape[-1]:
        return TensorArg(src.dtype, shape, True, heads=True)
    if src.heads and len(shape) >= 2 and shape[-1] == src.shape[-2] * src.shape[-1]:
        return TensorArg(src.dtype, shape, True)
    raise EmitError(f"a view of an activation from {list(src.shape)} to {list(shape)}: "
                    f"only views that keep the features, or unfold or fold a per-head "
                    f"norm's heads, are written")


def tokens_index(body: List[Tuple[str, str]], args: Sequence[str],
                 arg_types: Sequence[TensorArg]) -> str:
    """The SSA name of the token count (an index), defined at the start of
    `body` the first time: the first dimension of the first activation
    argument (an argument, so that no op of the body gains a use)."""
    if not any(text.startswith("%tokens = ") for text, _ in body):
        i = next((i for i, a in enumerate(arg_types) if a.activation and not a.per_row), None)
        if i is None:
            raise EmitError("a per-head view in a function without activation arguments")
        name = args[i].split(":")[0].strip()
        body[:0] = [("%c0 = arith.constant 0 : index", ""),
                    (f"%tokens = tensor.dim {name}, %c0 : {arg_types[i].mlir_type()}", "")]
    return "%tokens"


@dataclass
class Forward:
    """A partition written in the dialect, before it is made a function: the
    body, and for each graph node the SSA name and type of its value (the
    backward, `emit_grad.py`, reads them); `statistics` holds the SSA names
    of each norm's saved statistics ("mean", "rstd") where they were asked
    for."""
    placeholders: List[fx.Node]
    inputs: List[TensorArg]
    args: List[str]
    body: List[Tuple[str, str]]          # (op, location)
    listed: List[Tuple[str, str]]        # (op, source line)
    names: Dict[fx.Node, str]
    types: Dict[fx.Node, TensorArg]
    results: List[fx.Node]               # the partition's outputs
    outputs: List[TensorArg]
    single: bool
    attention: bool
    statistics: Dict[fx.Node, Dict[str, str]] = field(default_factory=dict)
    # RMSNorms written without their weight (x_hat), the weight moved into
    # the linear layers reading them (emit_grad.foldable_norms).
    folded: FrozenSet[fx.Node] = frozenset()


def write(sub: fx.GraphModule, arg_values: Sequence[torch.Tensor],
          statistics: bool = False, fold: FrozenSet[fx.Node] = frozenset()) -> Forward:
    """Partition `sub`, whose placeholders take values like `arg_values`
    (the parent's metadata), in the dialect's ops. statistics=True makes
    every norm also compute its saved statistics (rstd; LayerNorm's mean
    and rstd), for the backward. The RMSNorms in `fold` are written as
    x_hat, without their weight g, and each linear layer reading one as
    x_hat (W diag(g))^T (`fusion.mul W, g`): the same values up to bf16
    roundings, and a training forward that saves x_hat alone where it saved
    the norm's input and output (emit_grad.foldable_norms)."""
    graph = sub.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(arg_values):
        raise EmitError("partition inputs and values differ")
    for p, v in zip(placeholders, arg_values):
        p.meta["val"] = v
    tables = _rope_tables(graph)
    static = _weights(graph) | tables
    # A partition with attention (a gdpa, alone or in its block) keeps every
    # tensor's model shape: the heads views between [B, L, H, D] and
    # [B, L, H * D] become reshapes that fusion-fuse matches.
    attention = any(n.target is ops.gdpa for n in graph.nodes)
    if attention:
        static.update(placeholders)
    names: Dict[fx.Node, str] = {}
    types: Dict[fx.Node, TensorArg] = {}
    saved_stats: Dict[fx.Node, Dict[str, str]] = {}
    tokens: Optional[int] = None
    def spec(node: fx.Node, activation: bool, heads: bool = False) -> TensorArg:
        nonlocal tokens
        t = _tensor(node)
        if t.dtype not in MLIR_DTYPES:
            raise EmitError(f"{node.name}: dtype {t.dtype}")
        shape = tuple(int(d) for d in t.shape)
        if activation:
            if len(shape) < (3 if heads else 2):
                raise EmitError(f"{node.name}: a rank-{len(shape)} activation")
            row = shape[-1] * (shape[-2] if heads else 1)
            count = t.numel() // row if row else 0
            if tokens is None:
                tokens = count
            elif count != tokens:
                raise EmitError(f"{node.name}: {count} tokens where the partition has {tokens}")
        return TensorArg(t.dtype, shape, activation, heads=heads)

    args: List[str] = []
    inputs: List[TensorArg] = []
    for i, p in enumerate(placeholders):
        arg = spec(p, p not in static and _tensor(p).dim() >= 2)
        arg.table = p in tables
        inputs.append(arg)
        names[p], types[p] = f"%arg{i}", arg
        args.append(f"%arg{i}: {arg.mlir_type()}")

    body: List[Tuple[str, str]] = []  # (op, location)
    listed: List[Tuple[str, str]] = []

    def ty(node):
        return types[node].mlir_type()

    def operand(node):
        if node not in names:
            raise EmitError(f"{node.name}: used before it is defined")
        return names[node]

    count = 0
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op != "call_function":
            raise EmitError(f"{node.name}: {node.op} inside a partition")
        if node.target in VIEWS:
            source = node.args[0]
            view = view_arg(types[source], tuple(int(d) for d in _tensor(node).shape))
            if view.heads == types[source].heads and \
                    (view.activation or view.shape == types[source].shape):
                names[node], types[node] = operand(source), view
                continue
            result = f"%v{count}"
            count += 1
            if view.activation:  # a per-head norm's heads, unfolded or folded back
                text = per_head_view(result, operand(source), types[source], view,
                                     tokens_index(body, args, inputs))
            else:
                text = _heads_reshape(result, operand(source), types[source], view)
            body.append((text, _loc(node)))
            names[node], types[node] = result, view
            continue
        per_head = node.target in (ops.rms_norm, ops.layer_norm) and types[node.args[0]].heads
        if not per_head and any(isinstance(a, fx.Node) and a in types and types[a].heads
                                for a in node.args):
            raise EmitError(f"{node.name}: an operand viewed per head (only a norm takes one)")
        result = f"%v{count}"
        count += 1
        out = spec(node, not attention, heads=per_head)
        loc = _loc(node)
        where = source_line(node)
        if node.target in (ops.linear, ops.matmul):
            x, w, b = node.args
            bias = f" bias({operand(b)} : {ty(b)})" if b is not None else ""
            attrs = " {transpose_rhs}" if node.target is ops.linear else ""
            weight = operand(w)
            if x in fold:  # W diag(g): the folded norm's weight
                weight = f"%wg{count}"
                g = x.args[1]
                body.append((f"{weight} = fusion.mul {operand(w)}, {operand(g)} : {ty(w)}, "
                             f"{ty(g)}", loc))
            body.append((f"{result} = fusion.matmul {operand(x)}, {weight}{bias}{attrs} : "
                        f"{ty(x)}, {ty(w)} -> {out.mlir_type()}", loc))
            op = "linear" if node.target is ops.linear else "matmul"
        elif node.target is ops.rms_norm:
            x, w, eps = node.args[:3]
            weight = f" weight({operand(w)} : {ty(w)})" if w is not None and node not in fold \
                else ""
            results, stat = result, ""
            if statistics:
                results, stat = f"{result}, %rstd{count}", f", {_statistics_type(types[x])}"
                saved_stats[node] = {"rstd": f"%rstd{count}"}
            body.append((f"{results} = fusion.rms_norm {operand(x)}{weight} "
                        f"{{epsilon = {float(eps):.9e} : f32}} : {ty(x)} -> {out.mlir_type()}"
                        f"{stat}", loc))
            op = "rms_norm"
        elif node.target is ops.layer_norm:
            x, w, b, eps = node.args
            weight = f" weight({operand(w)} : {ty(w)})" if w is not None else ""
            bias = f" bias({operand(b)} : {ty(b)})" if b is not None else ""
            stat = _statistics_type(types[x])
            body.append((f"{result}, %mean{count}, %rstd{count} = fusion.layer_norm {operand(x)}"
                        f"{weight}{bias} {{epsilon = {float(eps):.9e} : f32}} : {ty(x)} -> "
                        f"{out.mlir_type()}, {stat}, {stat}", loc))
            if statistics:
                saved_stats[node] = {"mean": f"%mean{count}", "rstd": f"%rstd{count}"}
            op = "layer_norm"
        elif node.target is ops.rope:
            # Tables per token ([tokens, R]) or per position ([positions,
            # R], row m mod positions): 2-D either way.
            x, cos, sin, head_dim, interleaved = node.args
            pairs = ", interleaved" if interleaved else ""
            body.append((f"{result} = fusion.rope {operand(x)}, {operand(cos)}, {operand(sin)} "
                         f"{{head_dim = {int(head_dim)} : i64{pairs}}} : {ty(x)}, "
                         f"{ty(cos)} -> {out.mlir_type()}", loc))
            op = "rope"
        elif node.target is ops.gdpa:
            q, k, v, activation, scale = node.args
            body.append((f"{result} = fusion.gdpa {operand(q)}, {operand(k)}, {operand(v)} "
                         f"{{activation = #fusion.activation<{activation}>, "
                         f"scale = {float(scale):.9e} : f32}} : {ty(q)}, {ty(k)}, {ty(v)} -> "
                         f"{out.mlir_type()}", loc))
            op = "gdpa"
        elif activation_kind(node) is not None:
            # act(x), same type in and out; fusion-fuse moves it into the
            # epilogue of the GEMM computing x (support._gemm_activation).
            x, op = node.args[0], activation_kind(node)
            body.append((f"{result} = fusion.activation {operand(x)} {{activation = "
                         f"#fusion.activation<{op}>}} : {ty(x)}", loc))
        elif node.target in BINARY:
            a, b = binary_operands(node)
            types_text = ty(a) if ty(a) == ty(b) else f"{ty(a)}, {ty(b)}"
            body.append((f"{result} = fusion.{BINARY[node.target]} {operand(a)}, {operand(b)} : "
                        f"{types_text}", loc))
            op = BINARY[node.target]
        else:
            raise EmitError(f"{node.name}: {node.target} is not supported")
        names[node], types[node] = result, out
        listed.append((op, f"{where[0]}:{where[1]}" if where else "?"))

    output = next(n for n in graph.nodes if n.op == "output")
    values = output.args[0]
    single = not isinstance(values, (tuple, list))
    values = [values] if single else list(values)
    outputs = []
    for v in values:
        if not isinstance(v, fx.Node) or v not in types or names[v].startswith("%arg"):
            raise EmitError("a partition output that is not computed by it")
        if types[v].heads:
            raise EmitError(f"{v.name}: a per-head value as a partition output (the libraries "
                            f"take and return [tokens, features])")
        outputs.append(TensorArg(types[v].dtype, tuple(int(d) for d in _tensor(v).shape),
                                 types[v].activation))
    return Forward(placeholders, inputs, args, body, listed, names, types, values, outputs,
                   single, attention, saved_stats, frozenset(fold))


def render(forward: Forward, target: str,
           extra: Sequence[Tuple[str, TensorArg]] = ()) -> Program:
    """`forward` as a function returning the partition's outputs, then the
    `extra` values (SSA name, type): a module for `target`, named
    `fusion_<digest of its body>` (equal partitions are one function)."""
    outputs = list(forward.outputs) + [arg for _, arg in extra]
    result_types = ", ".join(o.mlir_type() for o in outputs)
    returned = ", ".join([forward.names[v] for v in forward.results] + [n for n, _ in extra])
    return _function(forward.args, forward.body, returned, result_types, target,
                     forward.inputs, outputs, forward.single and not extra, forward.listed)


def _function(args, body, returned, result_types, target, inputs, outputs, single,
              listed) -> Program:
    """The module of one function with `body` ((op, location) lines)."""
    def module(name, lines):
        return (f"module attributes {{fusion.target = {TARGET_ATTR.format(target)}}} {{\n"
                f"func.func @{name}({', '.join(args)}) -> ({result_types}) {{\n"
                + "".join(f"  {line}\n" for line in lines)
                + f"  return {returned} : {result_types}\n}}\n}}\n")
    plain = [text for text, _ in body]
    digest = hashlib.sha256(module("f", plain).encode()).hexdigest()[:16]
    name = f"fusion_{digest}"
    return Program(name, module(name, plain), inputs, outputs, single, listed,
                   module(name, [text + loc for text, loc in body]))


def emit(sub: fx.GraphModule, arg_values: Sequence[torch.Tensor], target: str,
         mark_weights: bool = False) -> Program:
    """The dialect function computing partition `sub`, whose placeholders
    take values like `arg_values` (the parent's metadata). Its name is
    `fusion_<digest of its body>`: equal partitions are one function.
    `mark_weights`: the inputs that are neither activations nor per-row
    statistics (the module's parameters; not in an attention partition,
    whose activations are static too) get `{fusion.weight}`, so that
    fusion-fuse moves what is computed from them alone (Lazy Pre-Norm's
    weight folds) into `<name>_prepare`, which the call runs only when a
    weight changed (calls.py)."""
    forward = write(sub, arg_values)
    # An attention partition's inputs are all static (q, k and v too): none
    # is taken for a weight there.
    if mark_weights and not forward.attention:
        forward.args = [text + " {fusion.weight}" if arg.static else text
                        for text, arg in zip(forward.args, forward.inputs)]
    return render(forward, target)
