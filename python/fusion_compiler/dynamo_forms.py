"""Forms kept whole through AOTAutograd, for the torch.compile backend.

`compile` captures the model with torch.export, whose ATen graphs keep
`einsum` whole, and `patterns.py` finds GDPA there. Under torch.compile,
AOTAutograd decomposes einsum into permutes, clones and bmm before the
backend's partitioner sees the graph, and Inductor's decompositions take
the activation apart. So, in Dynamo's graph (torch-level calls, before
AOTAutograd), `keep_attention_whole` replaces each GDPA written with
einsums,

    act(einsum("bihd,bjhd->bhij", q, k) * scale)  ->  einsum("bhij,bjhd->bihd", ., v)

(scale as a product or a quotient by a number, the letters free), by one
call of the operator `fusion_compiler::gdpa`, which AOTAutograd keeps as
one node and `patterns.recognize` turns into the front end's gdpa. Only
without gradients: the operator has no autograd formula. Where its
partition is not compiled, Inductor calls it as an extern kernel (PyTorch's
arithmetic, `ops.gdpa`).
"""

from __future__ import annotations

import operator
from typing import Optional

import torch
import torch.fx as fx

from . import ops
from .calls import _LIBRARY

_LIBRARY.define("gdpa(Tensor q, Tensor k, Tensor v, str activation, float scale) -> Tensor")
_LIBRARY.impl("gdpa", ops.gdpa, "CompositeExplicitAutograd")


@torch.library.register_fake("fusion_compiler::gdpa")
def _(q, k, v, activation, scale):
    return q.new_empty((*q.shape[:3], v.shape[-1]))


GDPA = torch.ops.fusion_compiler.gdpa.default

_EINSUM = (torch.einsum,)
_ACTIVATIONS = {torch.nn.functional.silu: "silu", torch.relu: "relu",
                torch.nn.functional.relu: "relu"}


def same_equation(given: str, spec: str) -> bool:
    """Whether einsum equation `given` is `spec` up to the renaming of its
    letters."""
    given = given.replace(" ", "")
    if len(given) != len(spec):
        return False
    mapping = {}
    for a, b in zip(given, spec):
        if (a.isalpha() != b.isalpha()) or (not a.isalpha() and a != b):
            return False
        if a.isalpha() and mapping.setdefault(a, b) != b:
            return False
    return len(set(mapping.values())) == len(mapping)


def _einsum(node, spec: str):
    """The two operands of `node` if it is einsum(spec, x, y), else None."""
    if not (isinstance(node, fx.Node) and node.op == "call_function" and
            node.target in _EINSUM and node.args and isinstance(node.args[0], str) and
            same_equation(node.args[0], spec) and not node.kwargs):
        return None
    operands = node.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return tuple(operands) if len(operands) == 2 else None


def _activation(node) -> Optional[str]:
    if not isinstance(node, fx.Node) or node.op != "call_function" or len(node.args) != 1:
        return None
    if node.target is torch.nn.functional.gelu:
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(node.kwargs.get("approximate", "none"))
    if node.kwargs and node.kwargs != {"inplace": False}:
        return None
    return _ACTIVATIONS.get(node.target)


def _only_user(node: fx.Node) -> Optional[fx.Node]:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def keep_attention_whole(gm: fx.GraphModule) -> int:
    """Rewrites Dynamo's graph `gm` in place; returns how many GDPAs it kept."""
    graph, kept = gm.graph, 0
    for out in list(graph.nodes):
        operands = _einsum(out, "bhij,bjhd->bihd")
        if operands is None:
            continue
        act_node, v = operands
        activation = _activation(act_node)
        if activation is None or _only_user(act_node) is not out:
            continue
        scaled, scale = act_node.args[0], 1.0
        chain = [act_node]
        if isinstance(scaled, fx.Node) and scaled.op == "call_function" and \
                scaled.target in (operator.mul, operator.truediv, torch.mul, torch.div) and \
                len(scaled.args) == 2 and isinstance(scaled.args[1], (int, float)) and \
                not isinstance(scaled.args[1], bool) and _only_user(scaled) is act_node:
            if scaled.target in (operator.truediv, torch.div):
                if scaled.args[1] == 0:
                    continue
                scale = 1.0 / float(scaled.args[1])
            else:
                scale = float(scaled.args[1])
            chain.append(scaled)
            scores = scaled.args[0]
        else:
            scores = scaled
        qk = _einsum(scores, "bihd,bjhd->bhij")
        if qk is None or _only_user(scores) is not chain[-1]:
            continue
        q, k = qk
        with graph.inserting_before(out):
            call = graph.call_function(GDPA, (q, k, v, activation, scale))
        call.meta.update({key: out.meta[key] for key in ("stack_trace", "nn_module_stack")
                          if key in out.meta})
        out.replace_all_uses_with(call)
        for node in [out] + chain + [scores]:
            graph.erase_node(node)
        kept += 1
    if kept:
        graph.lint()
        gm.recompile()
    return kept
