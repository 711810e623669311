"""Writes a partition's training programs in the dialect: a forward that also
returns what the backward reads, and a backward per set of inputs that need
gradients.

The training forward is the partition's program with each norm computing
its statistics (`fusion.rms_norm`'s rstd, `fusion.layer_norm`'s mean and
rstd) and returning them, with every intermediate value a gradient reads
(the norm's output that a linear layer after it reads for its weight
gradient, say): what the backward needs is saved, never recomputed. The
partition's inputs (x, the weights) are saved as they are, by autograd.

The backward walks the partition's graph in reverse, one rule per op:

    linear  y = x W^T + b   dx = dy W            fusion.matmul
                            dW = dy^T x          fusion.matmul {transpose_lhs}
    matmul  y = x W + b     dx = dy W^T          fusion.matmul {transpose_rhs}
                            dW = x^T dy          fusion.matmul {transpose_lhs}
    rms_norm                dx, dweight          fusion.rms_norm_grad
    layer_norm              dx, dweight, dbias   fusion.layer_norm_grad {with_bias_grad}
    gdpa                    dq, dk, dv           fusion.gdpa_grad
    add, mul, views         dy passed on, fusion.mul, the inverse heads reshape

and sums the gradients of a value read twice with `fusion.add`. A bias's
gradient (a linear's, a broadcast add's) and a vector factor's (`x * v`) are
column sums over the tokens, which the dialect has no op for: the backward
returns the tensor to sum and PyTorch sums it (`Backward.pytorch` says
so, for `explain`). Only the gradients of the inputs asked for are written:
no dx GEMM for a first layer's input that needs none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx as fx

from . import ops
from .emit import (EmitError, Forward, Program, TensorArg, _function, _heads_reshape, _loc,
                   per_head_view, render, statistics_arg, tokens_index, write)
from .support import BINARY, VIEWS, activation_kind, binary_operands

# A forward value the backward reads: (node, "value" | "rstd" | "mean").
Key = Tuple[fx.Node, str]
# Where a tensor comes from at run time: ("input", i) a partition input,
# ("output", j) a partition output, ("extra", j) an extra output of the
# training forward, ("grad", k) the gradient of output k, ("result", j) a
# result of the backward program.
Source = Tuple[str, int]

COLUMN_SUM = "a column sum over the tokens (the dialect has no column reduction)"


@dataclass
class Backward:
    """The backward of a partition for one set of inputs needing gradients."""
    program: Optional[Program]   # None where nothing is left to compute in the dialect
    reads: List[object]          # each program input: a Key, or ("grad", k)
    # Per partition input: the terms of its gradient, ("direct" | "colsum",
    # source), "colsum" a column sum over the tokens; empty: no gradient.
    gradients: List[List[Tuple[str, Source]]]
    pytorch: List[str] = field(default_factory=list)  # what PyTorch computes, and why
    ops: List[str] = field(default_factory=list)      # the dialect ops written


@dataclass
class Training:
    """A partition's training forward and what its backward reads."""
    forward: Program              # the partition's outputs, then the extra saved values
    saves: List[str]              # what autograd saves, in words (for explain)
    sources: Dict[Key, Source]    # where each forward value the backward reads lives
    saved: List[Source]           # the tensors autograd saves, in order
    written: Forward
    full: Backward                # the backward for every input
    target: str                   # the programs' fusion.target (a chip)


def _vector(arg: TensorArg) -> bool:
    """A value the gradients of which are summed in PyTorch, not with fusion.add
    (a parameter vector: f32 norm gradients beside bf16 ones, say)."""
    return not arg.activation and len(arg.shape) < 2


class _Writer:
    """Walks a partition's graph in reverse, writing the gradient ops."""

    def __init__(self, fwd: Forward, needs: Sequence[bool]):
        self.fwd = fwd
        self.args: List[str] = []
        self.arg_types: List[TensorArg] = []
        self.reads: List[object] = []
        self.read_names: Dict[object, str] = {}
        self.body: List[Tuple[str, str]] = []
        self.grads: Dict[fx.Node, List[Tuple[str, TensorArg]]] = {}
        self.colsums: Dict[fx.Node, List[Tuple[str, TensorArg]]] = {}
        self.pytorch: List[str] = []
        self.ops: List[str] = []
        self.count = 0
        self.requires = {p for p, need in zip(fwd.placeholders, needs) if need}
        for node in fwd.names:
            if node.op == "call_function" and any(
                    isinstance(a, fx.Node) and a in self.requires for a in node.args):
                self.requires.add(node)

    def new(self, prefix: str = "%g") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def read(self, key) -> str:
        """The backward program's argument holding forward value `key` (or
        ("grad", k), the gradient of output k)."""
        if key in self.read_names:
            return self.read_names[key]
        if key[0] == "grad":
            arg = self.fwd.outputs[key[1]]
        elif key[1] == "value":
            arg = self.fwd.types[key[0]]
        else:
            arg = statistics_arg(self.fwd.types[key[0].args[0]])
        if arg.heads:
            raise EmitError(f"{key[0].name}: a per-head value read by the backward")
        name = f"%arg{len(self.args)}"
        self.args.append(f"{name}: {arg.mlir_type()}")
        self.arg_types.append(arg)
        self.reads.append(key)
        self.read_names[key] = name
        return name

    def value(self, node: fx.Node) -> str:
        """Forward value `node`: read from the backward program's arguments,
        or, for a view of a partition input (the heads reshape of q, say),
        the same view of that input made here, so that the training forward
        does not return (copy) a view of an input autograd saves anyway;
        likewise a per-head view (a per-head norm's input), made here of the
        [tokens, features] value it views."""
        source = node.args[0] if (node.op == "call_function" and node.target in VIEWS
                                  and node.args) else None
        key = (node, "value")
        if key not in self.read_names and isinstance(source, fx.Node) and \
                (self._view_of_input(source) or self.fwd.types[node].heads):
            name = self.value(source)
            src, view = self.fwd.types[source], self.fwd.types[node]
            if view.heads != src.heads:
                result = self.new()
                self.body.append((per_head_view(result, name, src, view, self.tokens()),
                                  _loc(node)))
                name = result
            elif not (view.activation or view.shape == src.shape):
                result = self.new()
                self.body.append((_heads_reshape(result, name, src, view), _loc(node)))
                name = result
            self.read_names[key] = name
            return name
        return self.read(key)

    def tokens(self) -> str:
        """The SSA index of the token count (emit.tokens_index)."""
        return tokens_index(self.body, [a.split(":")[0] for a in self.args], self.arg_types)

    def _view_of_input(self, node: fx.Node) -> bool:
        """`node` is a partition input or a chain of views of one."""
        while node.op == "call_function" and node.target in VIEWS and node.args \
                and isinstance(node.args[0], fx.Node):
            node = node.args[0]
        return node.op == "placeholder"

    def ty(self, node: fx.Node) -> str:
        return self.fwd.types[node].mlir_type()

    def contribute(self, node, name: str, arg: TensorArg) -> None:
        """Adds `name` (of type `arg`) to the gradient of `node`."""
        if not isinstance(node, fx.Node) or node not in self.requires:
            return
        terms = self.grads.setdefault(node, [])
        for i, (old, old_arg) in enumerate(terms):
            if old_arg.mlir_type() == arg.mlir_type() and not _vector(arg):
                total = self.new()
                self.body.append((f"{total} = fusion.add {old}, {name} : {arg.mlir_type()}",
                                  _loc(node)))
                self.ops.append("add")
                terms[i] = (total, arg)
                return
        if terms and node.op != "placeholder":
            raise EmitError(f"{node.name}: gradients of types {terms[0][1].mlir_type()} and "
                            f"{arg.mlir_type()}")
        terms.append((name, arg))

    def column_sum(self, node, name: str, arg: TensorArg, what: str) -> None:
        """The gradient of vector `node` is the column sum of `name`: PyTorch's."""
        if not isinstance(node, fx.Node) or node not in self.requires:
            return
        if node.op != "placeholder":
            raise EmitError(f"{node.name}: the gradient of a vector computed in the partition")
        self.colsums.setdefault(node, []).append((name, arg))
        note = f"{what}: {COLUMN_SUM}"
        if note not in self.pytorch:
            self.pytorch.append(note)

    def walk(self) -> None:
        for k, node in enumerate(self.fwd.results):
            if node in self.requires:
                self.contribute(node, self.read(("grad", k)), self.fwd.outputs[k])
        for node in reversed(list(self.fwd.names)):
            if node.op != "call_function" or node not in self.grads:
                continue
            (grad, _), = self.grads[node]
            self.rule(node, grad)

    def rule(self, node: fx.Node, g: str) -> None:
        loc, types, requires = _loc(node), self.fwd.types, self.requires
        if node.target in VIEWS:
            source = node.args[0]
            if self.fwd.names[node] == self.fwd.names[source]:
                self.contribute(source, g, types[source])
            elif types[node].heads != types[source].heads:  # a per-head norm's view
                result = self.new()
                self.body.append((per_head_view(result, g, types[node], types[source],
                                                self.tokens()), loc))
                self.contribute(source, result, types[source])
            else:  # a heads reshape (attention partitions): the inverse one
                result = self.new()
                self.body.append((_heads_reshape(result, g, types[node], types[source]), loc))
                self.contribute(source, result, types[source])
        elif node.target in (ops.linear, ops.matmul):
            self.linear(node, g, loc)
        elif node.target is ops.rms_norm:
            x, w = node.args[:2]
            if x not in requires and w not in requires:
                return
            weight = f" weight({self.value(w)} : {self.ty(w)})" if w is not None else ""
            dx, dw = self.new(), self.new()
            stat = statistics_arg(types[x]).mlir_type()
            vector = TensorArg(torch.float32, (types[x].features,), False)
            results = f"{dx}, {dw}" if w is not None else dx
            more = f", {vector.mlir_type()}" if w is not None else ""
            # A folded norm's forward value is x_hat, which its gradient
            # reads instead of the input (the forward saves x_hat alone).
            folded = node in self.fwd.folded
            source = self.value(node) if folded else self.value(x)
            attr = " {normalized_input}" if folded else ""
            self.body.append((f"{results} = fusion.rms_norm_grad {g}, {source}, "
                              f"{self.read((node, 'rstd'))}{weight}{attr} : {self.ty(node)}, "
                              f"{self.ty(x)}, {stat} -> {self.ty(x)}{more}", loc))
            self.ops.append("rms_norm_grad")
            self.contribute(x, dx, types[x])
            if w is not None:
                self.contribute(w, dw, vector)
        elif node.target is ops.layer_norm:
            self.layer_norm(node, g, loc)
        elif node.target is ops.gdpa:
            q, k, v, activation, scale = node.args
            dq, dk, dv = self.new(), self.new(), self.new()
            self.body.append((f"{dq}, {dk}, {dv} = fusion.gdpa_grad {g}, {self.value(q)}, "
                              f"{self.value(k)}, {self.value(v)} {{activation = "
                              f"#fusion.activation<{activation}>, scale = {float(scale):.9e} : "
                              f"f32}} : {self.ty(node)}, {self.ty(q)}, {self.ty(k)}, "
                              f"{self.ty(v)} -> {self.ty(q)}, {self.ty(k)}, {self.ty(v)}", loc))
            self.ops.append("gdpa_grad")
            for operand, grad in ((q, dq), (k, dk), (v, dv)):
                self.contribute(operand, grad, types[operand])
        elif node.target in BINARY:
            self.binary(node, g, loc)
        elif activation_kind(node) is not None:
            # (A partition with activations trains in pieces instead:
            # fusion_compiler._gradients_in_pieces.)
            raise EmitError(f"{node.name}: the gradient of {activation_kind(node)} (the "
                            f"dialect has no op for an activation's gradient)")
        else:
            raise EmitError(f"{node.name}: no gradient written for {node.target}")

    def linear(self, node: fx.Node, g: str, loc: str) -> None:
        x, w, b = node.args
        types, requires = self.fwd.types, self.requires
        transposed = node.target is ops.linear  # W as nn.Linear stores it, [out, in]
        if x in requires:
            dx = self.new()
            attr = "" if transposed else " {transpose_rhs}"
            self.body.append((f"{dx} = fusion.matmul {g}, {self.value(w)}{attr} : "
                              f"{self.ty(node)}, {self.ty(w)} -> {self.ty(x)}", loc))
            self.ops.append("matmul")
            self.contribute(x, dx, types[x])
        if w in requires:
            dw = self.new()
            lhs, rhs = (g, self.value(x)) if transposed else (self.value(x), g)
            lhs_ty, rhs_ty = (self.ty(node), self.ty(x)) if transposed else \
                (self.ty(x), self.ty(node))
            self.body.append((f"{dw} = fusion.matmul {lhs}, {rhs} {{transpose_lhs}} : "
                              f"{lhs_ty}, {rhs_ty} -> {self.ty(w)}", loc))
            self.ops.append("matmul")
            if x in self.fwd.folded:
                # The layer read x_hat (W diag(g))^T: dW = (dy^T x_hat) diag(g)
                # (fusion-fold-norm-weight makes it the GEMM's col_scale).
                scaled, gw = self.new(), x.args[1]
                self.body.append((f"{scaled} = fusion.mul {dw}, {self.value(gw)} : "
                                  f"{self.ty(w)}, {self.ty(gw)}", loc))
                self.ops.append("mul")
                dw = scaled
            self.contribute(w, dw, types[w])
        if b is not None:
            self.column_sum(b, g, types[node], f"the gradient of {node.name}'s bias")

    def layer_norm(self, node: fx.Node, g: str, loc: str) -> None:
        x, w, b = node.args[:3]
        types, requires = self.fwd.types, self.requires
        if not any(n in requires for n in (x, w, b)):
            return
        weight = f" weight({self.value(w)} : {self.ty(w)})" if w is not None else ""
        bias_grad = b is not None and b in requires
        dx = self.new()
        params = ([("w", self.new())] if w is not None else []) + \
            ([("b", self.new())] if bias_grad else [])
        stat = statistics_arg(types[x]).mlir_type()
        vector = TensorArg(torch.float32, (types[x].features,), False)
        results = ", ".join([dx] + [name for _, name in params])
        more = "".join(f", {vector.mlir_type()}" for _ in params)
        attr = " {with_bias_grad}" if bias_grad else ""
        self.body.append((f"{results} = fusion.layer_norm_grad {g}, {self.value(x)}, "
                          f"{self.read((node, 'mean'))}, {self.read((node, 'rstd'))}{weight}"
                          f"{attr} : {self.ty(node)}, {self.ty(x)}, {stat}, {stat} -> "
                          f"{self.ty(x)}{more}", loc))
        self.ops.append("layer_norm_grad")
        self.contribute(x, dx, types[x])
        for which, name in params:
            self.contribute(w if which == "w" else b, name, vector)

    def binary(self, node: fx.Node, g: str, loc: str) -> None:
        a, b = binary_operands(node)
        types = self.fwd.types
        same = types[b].shape == types[a].shape or \
            (types[a].activation and types[b].activation)
        if BINARY[node.target] == "add":
            self.contribute(a, g, types[a])
            if same:
                if types[b].dtype != types[a].dtype:
                    raise EmitError(f"{node.name}: an add of {types[a].dtype} and "
                                    f"{types[b].dtype} (the second's gradient needs a cast, "
                                    f"which the dialect has no op for)")
                self.contribute(b, g, types[b])
            else:
                self.column_sum(b, g, types[node], f"the gradient of the vector {node.name} adds")
            return
        # mul: d(a * b) = dy * b and dy * a.
        def product(x, y):
            name = self.new()
            text = self.ty(node) if types[y].mlir_type() == self.ty(node) else \
                f"{self.ty(node)}, {self.ty(y)}"
            self.body.append((f"{name} = fusion.mul {g}, {self.value(y)} : {text}", loc))
            self.ops.append("mul")
            return name
        if a in self.requires:
            self.contribute(a, product(a, b), types[a])
        if b in self.requires:
            if same:
                if types[b].dtype != types[a].dtype:
                    raise EmitError(f"{node.name}: a product of {types[a].dtype} and "
                                    f"{types[b].dtype} (the second's gradient needs a cast, "
                                    f"which the dialect has no op for)")
                self.contribute(b, product(b, a), types[b])
            else:
                self.column_sum(b, product(b, a), types[node],
                                f"the gradient of the vector {node.name} multiplies by")

    def finish(self, target: str) -> Backward:
        results: List[str] = []
        result_types: List[TensorArg] = []

        def source(name: str, arg: TensorArg) -> Source:
            for key, read in self.read_names.items():
                if read == name:
                    if key[0] != "grad":
                        raise EmitError("a gradient that is a forward value")
                    return ("grad", key[1])
            if name not in results:
                results.append(name)
                result_types.append(arg)
            return ("result", results.index(name))

        gradients = []
        for p in self.fwd.placeholders:
            terms = [("direct", source(n, a)) for n, a in self.grads.get(p, [])]
            terms += [("colsum", source(n, a)) for n, a in self.colsums.get(p, [])]
            gradients.append(terms if p in self.requires else [])
        program = None
        if results:
            program = _function(self.args, self.body, ", ".join(results),
                                ", ".join(a.mlir_type() for a in result_types), target,
                                self.arg_types, result_types, False, [])
        return Backward(program, self.reads, gradients, self.pytorch, self.ops)


def emit_backward(fwd: Forward, needs: Sequence[bool], target: str) -> Backward:
    """The backward of `fwd` (written with statistics) computing the gradients
    of the partition inputs where `needs` is true."""
    if len(needs) != len(fwd.placeholders):
        raise EmitError(f"expected {len(fwd.placeholders)} flags, got {len(needs)}")
    writer = _Writer(fwd, needs)
    writer.walk()
    return writer.finish(target)


# The most outputs the linear layers after a folded norm may have in all, per
# input feature (fusion-fold-norm-weight's kMaxOutputsPerInput: W diag(g) is
# computed on every call).
MAX_FOLD_OUTPUTS_PER_INPUT = 2


def foldable_norms(sub: fx.GraphModule, arg_values: Sequence[torch.Tensor]) -> frozenset:
    """The RMSNorms of `sub` whose weight g a training forward moves into the
    linear layers after them (fusion-fold-norm-weight's rewrite, which the
    compiler cannot make on a forward and backward written apart):

        y  = n W^T = x_hat (W diag(g))^T
        dW = dy^T n = (dy^T x_hat) diag(g)
        dh = rms_norm_grad(dn, x_hat, rstd, g) {normalized_input}

    so that the forward saves x_hat alone where it saved the norm's input h
    and output n (and a norm in a GEMM's epilogue stores one [M, N] tensor
    instead of two). Taken where that is so: g is a parameter, h is computed
    by the partition and read by the norm alone, n is read only by linear
    layers (nn.Linear's [out, in] weight, a parameter) with at most 2 N
    outputs in all, neither is a partition output, and n has h's dtype."""
    graph = sub.graph
    if any(n.target is ops.gdpa for n in graph.nodes):
        return frozenset()
    output = next(n for n in graph.nodes if n.op == "output")
    returned = set(output.all_input_nodes)
    values = dict(zip([n for n in graph.nodes if n.op == "placeholder"], arg_values))
    fold = set()
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not ops.rms_norm:
            continue
        h, g = node.args[:2]
        if not isinstance(g, fx.Node) or g.op != "placeholder" or g not in values:
            continue
        if not isinstance(h, fx.Node) or h.op != "call_function" or h in returned or \
                list(h.users) != [node] or node in returned:
            continue
        hv, nv = h.meta.get("val"), node.meta.get("val")
        if hv is None or nv is None or hv.dtype != nv.dtype or values[g].dim() != 1:
            continue
        layers = list(node.users)
        if not layers or any(u.target is not ops.linear or u.args[0] is not node or
                             not isinstance(u.args[1], fx.Node) or
                             u.args[1].op != "placeholder" or u.args[1] is node
                             for u in layers):
            continue
        if any(values[u.args[1]].dim() != 2 for u in layers):
            continue
        outputs = sum(int(values[u.args[1]].shape[0]) for u in layers)
        if outputs > MAX_FOLD_OUTPUTS_PER_INPUT * int(values[g].shape[0]):
            continue
        fold.add(node)
    return frozenset(fold)


def emit_training(sub: fx.GraphModule, arg_values: Sequence[torch.Tensor],
                  target: str) -> Training:
    """The training forward of partition `sub` (see the module's docstring)
    and its backward for every input."""
    fwd = write(sub, arg_values, statistics=True, fold=foldable_norms(sub, arg_values))
    full = emit_backward(fwd, [True] * len(fwd.placeholders), target)
    sources: Dict[Key, Source] = {}
    extras: List[Tuple[str, TensorArg]] = []
    returned = [fwd.names[v] for v in fwd.results]
    for key in full.reads:
        if key[0] == "grad":
            continue
        node, kind = key
        if kind == "value":
            name, arg = fwd.names[node], fwd.types[node]
        else:
            name, arg = fwd.statistics[node][kind], statistics_arg(fwd.types[node.args[0]])
        if name.startswith("%arg"):
            sources[key] = ("input", int(name[len("%arg"):]))
        elif name in returned:
            sources[key] = ("output", returned.index(name))
        else:
            if name not in [n for n, _ in extras]:
                extras.append((name, arg))
            sources[key] = ("extra", [n for n, _ in extras].index(name))
    saved = list(dict.fromkeys(sources.values()))
    saves = [(f"{node.name}'s x_hat (its weight folded into the next layer)"
              if node in fwd.folded else f"{node.name}") if kind == "value"
             else f"{node.name}'s {kind}" for node, kind in sources]
    return Training(render(fwd, target, extras), saves, sources, saved, fwd, full, target)
