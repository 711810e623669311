"""From a PyTorch model to the fusion compiler's kernels, without writing MLIR.

    import fusion_compiler
    fast = fusion_compiler.compile(model, (x,))          # target="sm_90a"
    y = fast(x)                    # on PyTorch's current stream, asynchronous
    print(fusion_compiler.explain(model, (x,)))          # what was fused, how, why not
    torch.compile(model, backend=fusion_compiler.backend)

`compile` captures the model with `torch.export` (an ATen graph), recognizes
the forms the dialect holds (RMSNorm, Hugging Face's LlamaRMSNorm arithmetic
in float32 included, LayerNorm, nn.Linear with and without bias, mm/addmm,
residual and bias adds, element-wise products, an MLP's activation of a
GEMM's output and the gated MLP's act(gate) * up), groups them into maximal
partitions, writes each partition as a function of the dialect, compiles it
with the project's own pipeline (`fusion-compile`: fusion-fuse, kernel
planning, sm_90a kernels; or the reference lowering with target="cpu"),
caches the library on disk, and returns the graph with each partition
replaced by a call of its library. Everything else stays in PyTorch, never
an error; a partition that fails to compile stays in PyTorch too, and
`explain` says why (strict=True raises instead).

Training: a call that needs gradients (grad mode on and an input or
parameter that requires them) runs each partition through a
torch.autograd.Function (training.py) on compiled programs (emit_grad.py):
a training forward, the partition's program with the norms' statistics
(rstd, mean) and the intermediates the backward reads as extra outputs
(saved, never recomputed), and one backward program per partition written
with the dialect's gradient ops (dgrad and weight-gradient fusion.matmul,
fusion.rms_norm_grad / fusion.layer_norm_grad with the norm's parameter
gradients, fusion.gdpa_grad), computing only the gradients autograd asks
for. Bias gradients (column sums) are PyTorch's: the dialect has no column
reduction. A partition whose backward cannot be written or compiled keeps
its PyTorch ops for gradients, and `explain` says why. Without gradients
the call runs the inference program, unchanged.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .toolchain import FusionCompileError, compile_library, find_tools, fusion_report

__all__ = ["CompiledModule", "Explanation", "FusionCompileError", "backend", "build",
           "compile", "explain"]

DEFAULT_TARGET = "sm_90a"
TARGETS = ("cpu", "sm_90a", "sm_100a")


@dataclass
class PartitionReport:
    name: str
    ops: List[Tuple[str, str]]      # (dialect op, model source line)
    compiled: bool
    why_not: str = ""               # why it stays in PyTorch
    remarks: List[str] = field(default_factory=list)  # fusion-fuse's decisions
    library: str = ""
    mlir: str = ""
    # How its gradients are computed: "kernels" (a training forward and a
    # backward program of the dialect), "pytorch" (the partition's PyTorch
    # ops, `gradients_why` says why) or "" (not asked for).
    gradients: str = ""
    gradients_why: str = ""
    backward_ops: List[str] = field(default_factory=list)
    backward_saves: List[str] = field(default_factory=list)  # what autograd keeps
    backward_in_pytorch: List[str] = field(default_factory=list)  # pieces, and why
    backward_mlir: str = ""
    gradient_libraries: List[str] = field(default_factory=list)
    # A partition with activations trains in pieces (_gradients_in_pieces):
    # theirs, each with its own training programs.
    pieces: List["PartitionReport"] = field(default_factory=list)


@dataclass
class Explanation:
    target: str
    partitions: List[PartitionReport]
    left_in_pytorch: List[Tuple[str, str, str]]  # (node, why, source line)

    def __str__(self) -> str:
        lines = [f"fusion_compiler: {len(self.partitions)} partition(s) for {self.target}"]
        for p in self.partitions:
            state = ("compiled" if p.compiled else f"left in PyTorch: {p.why_not}"
                     if p.why_not else "to be compiled")
            lines.append(f"  {p.name}: {', '.join(op for op, _ in p.ops)} ({state})")
            for op, where in p.ops:
                lines.append(f"    {op:<10} {where}")
            if p.gradients == "kernels":
                pieces = f" in {len(p.pieces)} piece{'s' if len(p.pieces) > 1 else ''}" \
                    if p.pieces else ""
                lines.append(f"    backward on the kernels{pieces}: {', '.join(p.backward_ops)}; "
                             f"saved for it: {', '.join(p.backward_saves) or 'nothing'}")
                for piece in p.backward_in_pytorch:
                    lines.append(f"    backward in PyTorch: {piece}")
            elif p.gradients == "pytorch":
                lines.append(f"    backward in PyTorch (the partition's ops): {p.gradients_why}")
            for remark in p.remarks:
                where, _, text = remark.partition(": remark: ")
                lines.append(f"    {text} [{where.rsplit(':', 1)[0]}]")
        if self.left_in_pytorch:
            lines.append("  left in PyTorch:")
            for node, why, where in self.left_in_pytorch:
                lines.append(f"    {node}: {why} ({where})")
        return "\n".join(lines)


def _torch():
    import torch
    return torch


def _check_target(target: str) -> str:
    # sm_100a (Blackwell: tcgen05, tensor memory) is emitted, assembled by
    # ptxas and structurally checked, but has never run on a B200.
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: expected one of {', '.join(TARGETS)}")
    return target


def _capture(model, example_inputs: Sequence[Any], example_kwargs=None):
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        fn = model

        class _Fn(torch.nn.Module):
            def forward(self, *args, **kwargs):
                return fn(*args, **kwargs)
        model = _Fn()
    exported = torch.export.export(model, tuple(example_inputs), kwargs=example_kwargs or None)
    return exported.module()


def _left_in_pytorch(gm) -> List[Tuple[str, str, str]]:
    from . import support
    from .emit import source_line
    import operator
    out = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = str(node.target)
        if "assert" in name or "sym_constrain" in name:
            continue
        why = support.reason(node)
        if why is not None:
            where = source_line(node)
            out.append((node.name, why, f"{where[0]}:{where[1]}" if where else "?"))
    return out


def _regroup(partitions, support):
    """Moves each linear layer into the partition that computes its input
    (the partitioner's greedy merge can put it with its consumers instead):
    every GEMM reading a norm's output then sits beside the norm, where
    Lazy Pre-Norm can take them all; then each activation into its GEMM's
    partition. Keeps the partitions worth a library:
    those holding a GEMM or a norm (element-wise ops alone gain nothing
    over PyTorch's own kernels)."""
    from . import ops
    owner = {n: p for p in partitions for n in p.nodes}
    for part in partitions:
        for node in list(part.nodes):
            if node.target not in (ops.linear, ops.matmul):
                continue
            source = owner.get(node.args[0])
            if source is None or source is part:
                continue
            if any(isinstance(a, type(node)) and a in owner for a in node.args[1:]):
                continue
            part.remove_node(node)
            source.add_node(node)
            owner[node] = source
    # Each activation beside the GEMM whose epilogue computes it (with the
    # views between them, and the gated product where its up GEMM is there
    # too): a GEMM moved above can leave its activation with the consumers,
    # Falcon's dense_h_to_4h with its norm, its gelu with dense_4h_to_h and
    # the parallel residual's adds. Moved after the GEMMs, so that those
    # consumers stay where they are. Every input of a moved node is in the
    # partition it joins: no cycle between partitions comes of it.
    for part in partitions:
        for node in list(part.nodes):
            if support.activation_kind(node) is None:
                continue
            chain, value = [node], node.args[0]
            while value.target in support.VIEWS:
                chain.append(value)
                value = value.args[0]
            source = owner.get(value)
            if source is None or source is part or value.target not in (ops.linear, ops.matmul) \
                    or any(owner.get(n) is not part for n in chain):
                continue
            users = [u for u in node.users if owner.get(u) is part]
            if len(node.users) == 1 and len(users) == 1 and \
                    support.BINARY.get(users[0].target) == "mul" and \
                    all(a is node or owner.get(a) is source for a in users[0].args[:2]):
                chain.insert(0, users[0])  # the gated product act(gate) * up
            for moved in reversed(chain):
                part.remove_node(moved)
                source.add_node(moved)
                owner[moved] = source
    anchors = (ops.linear, ops.matmul, ops.rms_norm, ops.layer_norm, ops.gdpa)
    return [p for p in partitions if any(n.target in anchors for n in p.nodes)]


def _drop_checks_of_partitioned(graph, partitions) -> None:
    """Erases export's metadata checks (nothing reads them) of the values a
    partition computes: the partition's result has the traced dtype and
    device by construction, and the check outside it would make the
    partition return the value for it alone, one more [tokens, features]
    store per call. Hugging Face's RMSNorm `.to(float32)` checks its input,
    which in a decoder layer is the residual sum after attention, an add
    that patterns._drop_checks_of_recognized (the recognized ops' values)
    does not see."""
    from .patterns import _CHECKS
    inside = {n for p in partitions for n in p.nodes}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _CHECKS and not node.users \
                and node.args and node.args[0] in inside:
            graph.erase_node(node)


def _gradients(entry: PartitionReport, sub, values, target: str, tools, load: bool):
    """The partition's training programs (emit_grad.py), compiled: a
    PartitionGradients to call where `load`, else only built into the cache.
    Never raises: a backward that cannot be written or compiled leaves the
    partition's gradients to its PyTorch ops, and `entry` says why."""
    from . import support
    from .emit import EmitError
    from .emit_grad import emit_training
    if any(_trained_in_pytorch(n) for n in sub.graph.nodes):
        return _gradients_in_pieces(entry, sub, target, load)
    try:
        training = emit_training(sub, values, "sm_90a" if target == "cpu" else target)
        entry.backward_ops = [f"fusion.{op}" for op in dict.fromkeys(training.full.ops)]
        entry.backward_in_pytorch = list(training.full.pytorch)
        entry.backward_saves = list(training.saves)
        entry.backward_mlir = training.full.program.mlir if training.full.program else ""
        if load:
            from .training import PartitionGradients
            gradients = PartitionGradients(training, target, tools)
            entry.gradient_libraries = gradients.libraries
        else:
            gradients = None
            for program in (training.forward, training.full.program):
                if program is not None:
                    entry.gradient_libraries.append(
                        compile_library(program.mlir, target, tools=tools).path)
        entry.gradients = "kernels"
        return gradients
    except (EmitError, FusionCompileError, OSError) as error:
        entry.gradients, entry.gradients_why = "pytorch", _reason(error)
        return None


def _trained_in_pytorch(node) -> bool:
    """An op whose gradient the dialect cannot write (no op for it): an
    activation, a rotary embedding (ops.rope)."""
    from . import ops, support
    return support.activation_kind(node) is not None or node.target is ops.rope


def _gradients_in_pieces(entry: PartitionReport, sub, target: str, load: bool):
    """The training of a partition with activations (an MLP's act(fc1(x)),
    the gated product act(gate(x)) * up(x)) or rotary embeddings, whose
    backward the dialect cannot write (it has no op for their gradients):
    the partition's graph partitioned again with those left to PyTorch, so
    that each piece between them is a partition with its own training
    programs and PyTorch's autograd computes them, and the products they
    feed, between the pieces (the layer's training as before they were
    fused; inference keeps the one program). A
    training.PiecewiseGradients to call where `load`; where a piece's
    backward cannot be written or compiled, None: the partition's PyTorch
    ops then serve its gradients, and `entry` says why."""
    import copy

    import torch.fx as fx

    from . import support
    from .training import PiecewiseGradients
    graph = copy.deepcopy(sub.graph)  # new nodes, their metadata (shapes, marks) kept
    for node in graph.nodes:
        if _trained_in_pytorch(node):
            node.meta[support.TRAINED_IN_PYTORCH] = True
    pieces, explanation = _partition(fx.GraphModule(sub, graph), target, True, False, False,
                                     load=load, gradients=True, recognized=True)
    parts = explanation.partitions
    entry.pieces = parts
    failed = [p for p in parts if not p.compiled or p.gradients != "kernels"]
    if not parts or failed:
        why = f"{failed[0].name}: {failed[0].why_not or failed[0].gradients_why}" if failed \
            else "no piece with a GEMM or a norm"
        entry.gradients = "pytorch"
        entry.gradients_why = f"its training pieces between the activations: {why}"
        return None
    entry.gradients = "kernels"
    entry.backward_ops = list(dict.fromkeys(op for p in parts for op in p.backward_ops))
    entry.backward_saves = [saved for p in parts for saved in p.backward_saves]
    entry.backward_in_pytorch = list(dict.fromkeys(
        piece for p in parts for piece in p.backward_in_pytorch))
    left = ", ".join(n.name for n in pieces.graph.nodes
                     if n.op == "call_function" and support.is_compute(n))
    count = f"{len(parts)} piece{'s' if len(parts) > 1 else ''}"
    entry.backward_in_pytorch.append(
        f"{left}: PyTorch's autograd, beside {count} with training programs of their own "
        f"(the dialect has no op for an activation's or a rotary embedding's gradient)")
    entry.backward_mlir = "\n".join(p.backward_mlir for p in parts)
    entry.gradient_libraries = [lib for p in parts for lib in [p.library] + p.gradient_libraries]
    return PiecewiseGradients(pieces) if load else None


def _in_model_order(call, sub, order: Dict[str, int]) -> None:
    """Puts partition `sub` (called by `call`) in the model's order: its
    ops as the model runs them (`order`: the export graph's node positions
    by name, which fuse_partitions keeps), its inputs as those ops first
    read them (operands in order), its outputs by where they are computed. The
    partitioner's own order changes across torch versions, and the program's
    text (its library's name and cache key) follows it: in this order, a
    library built with one torch is found by another."""
    late = len(order)
    graph = sub.graph
    inputs = [n for n in graph.nodes if n.op == "placeholder"]
    output = next(n for n in graph.nodes if n.op == "output")
    body = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    # The ops: the model's order is a topological one of every subset.
    body.sort(key=lambda n: order.get(n.name, late))
    for n in body:
        output.prepend(n)
    # The inputs as the ops first read them.
    first_read: Dict[Any, int] = {}
    for n in body + [output]:
        for operand in n.all_input_nodes:
            if operand.op == "placeholder":
                first_read.setdefault(operand, len(first_read))
    perm = sorted(range(len(inputs)), key=lambda i: first_read.get(inputs[i], late))
    anchor = body[0] if body else output
    for i in perm:
        anchor.prepend(inputs[i])
    call.args = tuple(call.args[i] for i in perm)
    # The outputs, and the parent's getitem of each.
    results = output.args[0]
    if isinstance(results, (tuple, list)) and len(results) > 1:
        perm = sorted(range(len(results)), key=lambda i: order.get(results[i].name, late))
        output.args = (type(results)(results[i] for i in perm),)
        new_index = {old: new for new, old in enumerate(perm)}
        for user in list(call.users):
            if user.op == "call_function" and user.target is operator.getitem:
                user.args = (call, new_index[user.args[1]])
    graph.lint()
    sub.recompile()


def _partition(gm, target: str, compile_now: bool, strict: bool, report: bool,
               load: bool = True, gradients: bool = False,
               cache_weight_folds: bool = False, frozen_weights: bool = False,
               recognized: bool = False):
    """Rewrites `gm` in place: recognized forms, partitions, compiled calls
    (with their training programs where `gradients`; with the weights'
    preparation outlined where `cache_weight_folds`, kept out of CUDA graph
    captures where `frozen_weights`). recognized: `gm` is a partition's
    graph, its forms already recognized and marked (_gradients_in_pieces)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    from . import patterns, support
    from .calls import CompiledPartition
    from .emit import EmitError, emit

    if not recognized:
        patterns.recognize(gm)
        support.mark_attention_blocks(gm.graph)
        support.mark_head_norms(gm.graph)
        patterns.recognize_ropes(gm)
    left = _left_in_pytorch(gm)
    # One partitioning per row count, so that a partition's activations
    # flatten alike (attention's [batch, heads, tokens, dim] tensors apart
    # from the [batch, tokens, hidden] ones), and one per attention block.
    counts = sorted({support.group(n) for n in gm.graph.nodes
                     if support.is_compute(n) and support.reason(n) is None} - {None}, key=str)
    # The model's order of computation (torch.export's), which each
    # partition's program follows whatever order the partitioner left.
    order = {n.name: i for i, n in enumerate(gm.graph.nodes)}
    fused = gm
    for count in counts:
        partitioner = CapabilityBasedPartitioner(fused, support.FusionOperatorSupport(count),
                                                 allows_single_node_partition=True)
        proposed = _regroup(partitioner.propose_partitions(), support)
        if proposed:
            _drop_checks_of_partitioned(fused.graph, proposed)
            fused = partitioner.fuse_partitions(proposed)
            # fuse_partitions names every call fused_<i>: keep them apart.
            for node in fused.graph.nodes:
                if node.op == "call_module" and str(node.target).startswith("fused_"):
                    tag = count if isinstance(count, int) else f"{count[0]}{count[1]}"
                    new = f"fusion_rows{tag}_{node.target}"
                    fused.add_submodule(new, fused.get_submodule(node.target))
                    fused.delete_submodule(node.target)
                    node.target = new
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and str(node.target).startswith("fusion_rows"):
            _in_model_order(node, fused.get_submodule(node.target), order)
    fused.recompile()
    reports: List[PartitionReport] = []
    tools = find_tools() if (compile_now or report) else None
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not str(node.target).startswith("fusion_rows"):
            continue
        sub = fused.get_submodule(node.target)
        entry = PartitionReport(f"partition {len(reports)}", [], False)
        reports.append(entry)
        try:
            values = [a.meta.get("val") for a in node.args]
            program = emit(sub, values, "sm_90a" if target == "cpu" else target,
                           mark_weights=cache_weight_folds)
            entry.name = f"{entry.name} ({program.name})"
            entry.ops, entry.mlir = program.ops, program.mlir_with_locations
            if report:
                try:
                    entry.remarks = fusion_report(program.mlir_with_locations, tools)
                except (FusionCompileError, OSError) as error:
                    # The report is information: a machine where the
                    # libraries come from the cache may not run fusion-opt.
                    first = str(error).splitlines()
                    entry.remarks = [f"?: remark: no fusion report ({first[-1] if first else error})"]
            if compile_now:
                lib = compile_library(program.mlir, target, tools=tools)
                entry.library = lib.path
                if load:
                    compiled = CompiledPartition(program, lib.path, target,
                                                 tools.runtime_library,
                                                 frozen_weights=frozen_weights)
                    compiled.fallback = sub
                    fused.add_submodule(node.target, compiled)
                if gradients:
                    trained = _gradients(entry, sub, values, target, tools, load)
                    if load:
                        compiled.gradients = trained
            entry.compiled = compile_now
        except (EmitError, FusionCompileError, OSError) as error:
            if strict:
                raise
            entry.why_not = _reason(error)
    fused.recompile()
    return fused, Explanation(target, reports, left)


def _lean(graph_module):
    """The graph without export's input checks and pytree wrapping: takes
    the flat tensors and returns the flat outputs. (Export's checks of every
    input cost more host time per call than a small layer's kernels; the
    partitions check their own inputs, and the graph's other ops fail on
    shapes they cannot take.)"""
    import copy

    import torch
    from torch.fx.graph import CodeGen

    from .patterns import _CHECKS
    graph = copy.deepcopy(graph_module.graph)
    for node in list(graph.nodes):
        if (node.op == "call_module" and node.target == "_guards_fn") or \
                (node.op == "call_function" and node.target in _CHECKS):
            if not node.users:
                graph.erase_node(node)
    graph._codegen = CodeGen()
    return torch.fx.GraphModule(graph_module, graph)


class CompiledModule:
    """A captured model whose supported partitions call compiled libraries.

    A call with the example's structure (positional tensors, no keywords)
    runs the graph without export's per-call input checks; any other call
    runs the exported module as it is."""

    def __init__(self, graph_module, explanation: Explanation, example_inputs=()):
        import torch.utils._pytree as pytree
        self.graph_module = graph_module
        self.explanation = explanation
        self._fast = None
        in_spec = getattr(graph_module, "_in_spec", None)
        out_spec = getattr(graph_module, "_out_spec", None)
        if in_spec is not None and out_spec is not None and \
                in_spec == pytree.tree_structure((tuple(example_inputs), {})):
            self._fast = _lean(graph_module)
            self._count = len(example_inputs)
            self._out_spec = out_spec
            self._single = out_spec == pytree.tree_structure(0)

    def __call__(self, *args, **kwargs):
        if self._fast is not None and not kwargs and len(args) == self._count:
            out = self._fast(*args)
            if self._single:
                return out[0]
            import torch.utils._pytree as pytree
            return pytree.tree_unflatten(out, self._out_spec)
        return self.graph_module(*args, **kwargs)

    def explain(self) -> Explanation:
        return self.explanation

    @property
    def mlir(self) -> List[str]:
        return [p.mlir for p in self.explanation.partitions]


def _check_frozen_weights(cache_weight_folds: bool, frozen_weights: bool) -> None:
    """frozen_weights says what a graph capture does with the kept folds:
    there are none without cache_weight_folds."""
    if frozen_weights and not cache_weight_folds:
        raise ValueError("frozen_weights=True keeps the weights' folds out of CUDA graph "
                         "captures: it needs cache_weight_folds=True")


def compile(model, example_inputs: Sequence[Any], target: str = DEFAULT_TARGET, *,
            example_kwargs=None, strict: bool = False, report: bool = True,
            gradients: bool = True, cache_weight_folds: bool = False,
            frozen_weights: bool = False) -> CompiledModule:
    """Compiles `model` (an nn.Module or a function of tensors) for the
    shapes, dtypes and devices of `example_inputs`. target: "sm_90a" (the
    default; a CUDA device runs it) or "cpu" (the reference lowering, for
    machines without a GPU). strict=True raises where a partition cannot be
    compiled instead of leaving it in PyTorch (a backward that cannot be
    compiled never raises: the partition's PyTorch ops then serve its
    gradients, and `explain` says why). report=False skips the fusion
    report (`explain`) for a faster compile. gradients=False compiles no
    training programs: a call that needs gradients then runs the
    partitions' PyTorch ops. cache_weight_folds=True keeps what a
    partition computes from its weights alone (Lazy Pre-Norm folds a
    norm's weight into the next linear's: diag(g) W, and a LayerNorm's
    bias into its bias) between calls, and computes it again only when a
    weight changed (another tensor, or its version counter moved: an
    optimizer step, load_state_dict or copy_ under no_grad bump it; an
    update through `.data` does not, and is not seen). It costs one more copy of each
    folded weight in memory and saves, per call, reading the weight and
    writing the fold (for a decode-sized call, most of the call's
    traffic); calls that compute gradients are unchanged. A call captured
    in a CUDA graph records the preparation, so that the graph's replays
    see in-place updates too; frozen_weights=True (with
    cache_weight_folds=True; inference, as Inductor's freezing) declares
    that the weights do not change while a graph replays: a capture after
    a call that prepared them (the capture recipe's warm-up calls) reads
    the kept folds instead of computing them again at every replay."""
    _check_target(target)
    try:
        gm = _capture(model, example_inputs, example_kwargs)
    except Exception as error:  # torch.export's refusals are many and version-dependent
        if strict:
            raise
        # The model stays PyTorch's, whole; explain says why.
        first = str(error).strip().splitlines()
        why = f"torch.export could not capture the model: {type(error).__name__}: " + \
            (first[0] if first else "")
        return CompiledModule(model, Explanation(target, [], [("model", why, "?")]))
    _check_frozen_weights(cache_weight_folds, frozen_weights)
    fused, explanation = _partition(gm, target, True, strict, report, gradients=gradients,
                                    cache_weight_folds=cache_weight_folds,
                                    frozen_weights=frozen_weights)
    return CompiledModule(fused, explanation, example_inputs if not example_kwargs else ())


def explain(model, example_inputs: Sequence[Any], target: str = DEFAULT_TARGET, *,
            example_kwargs=None) -> Explanation:
    """What `compile` would do, without compiling: the partitions, the
    passes' fusion decisions on each (which norms were fused, and how: Lazy
    Pre-Norm, an epilogue of one CTA, a cluster or rows through global
    memory; and why the others were not), each with the model's source
    line, and the operations left in PyTorch with the reason."""
    _check_target(target)
    gm = _capture(model, example_inputs, example_kwargs)
    return _partition(gm, target, False, False, True)[1]


def build(model, example_inputs: Sequence[Any], target: str = DEFAULT_TARGET, *,
          example_kwargs=None, strict: bool = True, gradients: bool = False,
          cache_weight_folds: bool = False) -> Explanation:
    """Compiles `model`'s partitions into the cache without loading them:
    ahead of time, on a machine without the target's GPU (the libraries
    need no GPU to build). A machine with the same tools' files
    ($FUSION_TOOLS_DIR: the identity of the compiler is their contents) and
    this cache ($FUSION_CACHE_DIR) then compiles the same model without
    running the compiler at all. Returns the explanation, with each
    partition's library; gradients=True also builds each partition's
    training forward and backward (`gradient_libraries`);
    cache_weight_folds as `compile`'s (the libraries differ)."""
    _check_target(target)
    gm = _capture(model, example_inputs, example_kwargs)
    return _partition(gm, target, True, strict, False, load=False, gradients=gradients,
                      cache_weight_folds=cache_weight_folds)[1]


def _reason(error: Exception) -> str:
    """Why a partition stays in PyTorch, in a line: the compiler's first
    diagnostic where it gave one ("'fusion.gdpa' op cannot generate ..."),
    else the error's first line."""
    lines = str(error).splitlines()
    for line in lines[1:]:
        if "error: " in line:
            return line.split("error: ", 1)[1].strip()
    for line in lines[1:]:
        if "crashed (signal" in line:  # fusion-compile's word for a tool that crashed
            return line.strip()
    return lines[0] if lines else type(error).__name__


def _inline(fused, node, sub, inputs=None) -> None:
    """Puts `sub` (a partition called by `node`, or a function of `inputs`,
    the tensor operands of a front-end op `node`) back in place of the call,
    in ATen ops again (front-end ops traced through their PyTorch code)."""
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    inputs = list(node.args) if inputs is None else inputs
    values = [a.meta.get("val") for a in inputs]
    mode = detect_fake_mode(values)
    if mode is not None:
        with mode:
            sub = make_fx(sub, decomposition_table=select_decomp_table())(*values)
    graph = fused.graph
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    with graph.inserting_before(node):
        out = graph.graph_copy(sub.graph, dict(zip(placeholders, inputs)))
    if isinstance(out, (tuple, list)):
        for user in list(node.users):  # getitem(node, i)
            user.replace_all_uses_with(out[user.args[1]])
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(out)
    graph.erase_node(node)
    if node.op == "call_module":
        fused.delete_submodule(node.target)


def _inline_front_end_op(fused, node) -> None:
    """A front-end op left outside every partition (recognized, but not
    supported: mixed dtypes, say), back in ATen ops for Inductor; also an
    ATen op the backend kept from Inductor's decompositions for the
    partitions to find (native_layer_norm, silu, gelu) that none took,
    decomposed as Inductor would have (it only falls back to ATen's kernel
    for native_layer_norm)."""
    import torch.fx as fx

    tensors = [a for a in node.args if isinstance(a, fx.Node)]

    def op(*values):
        it = iter(values)
        return node.target(*[next(it) if isinstance(a, fx.Node) else a for a in node.args],
                           **node.kwargs)
    _inline(fused, node, op, tensors)


def _kept_from_decomposition():
    """ATen ops the backend keeps from Inductor's decompositions, for the
    partitions to find: LayerNorm, and the activations fusion.activation
    computes (Inductor writes silu as x / (1 + exp(-x)) in float32, gelu
    likewise in steps; relu it keeps)."""
    import torch
    aten = torch.ops.aten
    return (aten.native_layer_norm.default, aten.silu.default, aten.gelu.default)


def _decompose_kept(graph_module) -> None:
    """A backward graph's ops of those kept from Inductor's decompositions
    (_kept_from_decomposition), decomposed as Inductor would have: the
    min-cut partitioner may recompute a forward's silu or gelu there (a
    cheap pointwise op instead of a saved tensor), and Inductor refuses an
    op whose decomposition exists ("make_fallback(aten.silu.default): a
    decomposition exists"; seen once in CI, not reproduced here)."""
    kept = _kept_from_decomposition()
    nodes = [n for n in graph_module.graph.nodes
             if n.op == "call_function" and n.target in kept and
             all("val" in a.meta for a in n.args if hasattr(a, "meta"))]
    for node in nodes:
        _inline_front_end_op(graph_module, node)
    if nodes:
        graph_module.recompile()


def _as_operator_calls(fused) -> None:
    """Replaces each call of a CompiledPartition module in `fused` by a call
    of the operator fusion_compiler::run_partition, with its metadata, so
    that Inductor can compile the graph around it."""
    import operator

    import torch
    from torch._guards import detect_fake_mode

    from .calls import CompiledPartition, register
    from . import ops
    graph = fused.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and (node.target in ops.FRONTEND_OPS or
                                           node.target in _kept_from_decomposition()):
            _inline_front_end_op(fused, node)
            continue
        if node.op != "call_module":
            continue
        part = fused.get_submodule(node.target)
        if isinstance(part, torch.fx.GraphModule) and str(node.target).startswith("fusion_rows"):
            _inline(fused, node, part)  # a partition left in PyTorch: Inductor's again
            continue
        if not isinstance(part, CompiledPartition):
            continue
        key = register(part)
        values = [a.meta.get("val") for a in node.args]
        with graph.inserting_before(node):
            call = graph.call_function(torch.ops.fusion_compiler.run_partition.default,
                                       (key, list(node.args)))
        mode = detect_fake_mode(values)
        if mode is not None:
            with mode:
                call.meta["val"] = torch.ops.fusion_compiler.run_partition.default(key, values)
        if part.program.single_output:
            with graph.inserting_after(call):
                first = graph.call_function(operator.getitem, (call, 0))
            if "val" in call.meta:
                first.meta["val"] = call.meta["val"][0]
            node.replace_all_uses_with(first)
        else:
            node.replace_all_uses_with(call)  # its users take getitem i alike
        graph.erase_node(node)
        fused.delete_submodule(node.target)
    graph.lint()
    fused.recompile()


def backend(gm, example_inputs, target: Optional[str] = None, inductor: bool = True,
            load: bool = True, cache_weight_folds: bool = False,
            frozen_weights: bool = False):
    """A torch.compile backend: `torch.compile(model, backend=fusion_compiler.backend)`.

    Inductor's own pipeline runs (Dynamo's graph through AOTAutograd, with
    Inductor's decompositions); in each forward graph, the supported
    partitions become calls of our libraries (target: sm_90a where the
    inputs are on a CUDA device, else cpu) and Inductor compiles everything
    else, the backward graphs included. inductor=False runs the rest in
    PyTorch's eager kernels instead. load=False only builds the libraries
    into the cache (like `build`; the graph then runs without them).
    cache_weight_folds and frozen_weights as `compile`'s (pass them with
    functools.partial or a lambda)."""
    torch = _torch()
    _check_frozen_weights(cache_weight_folds, frozen_weights)
    if target is None:
        on_cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in example_inputs)
        target = DEFAULT_TARGET if on_cuda else "cpu"
    _check_target(target)
    from .dynamo_forms import keep_attention_whole
    if not torch.is_grad_enabled():
        keep_attention_whole(gm)  # GDPA's einsums, whole through AOTAutograd
    if not inductor:
        from torch._dynamo.backends.common import aot_autograd

        def forward_compiler(graph_module, inputs):
            return _partition(graph_module, target, True, False, False, load,
                              cache_weight_folds=cache_weight_folds,
                              frozen_weights=frozen_weights)[0]
        return aot_autograd(fw_compiler=forward_compiler,
                            bw_compiler=lambda graph_module, inputs: graph_module)(
            gm, example_inputs)
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._inductor.decomposition import select_decomp_table

    # Inductor's decompositions, but LayerNorm and the activations kept whole
    # for the partitions to find (one no partition takes is decomposed
    # afterwards, _as_operator_calls).
    decompositions = {op: fn for op, fn in select_decomp_table().items()
                      if op not in _kept_from_decomposition()}

    def inner_compile(graph_module, inputs, **kwargs):
        if not kwargs.get("is_backward", False):
            fused = _partition(graph_module, target, True, False, False, load,
                               cache_weight_folds=cache_weight_folds,
                               frozen_weights=frozen_weights)[0]
            _as_operator_calls(fused)
            graph_module = fused
        else:
            _decompose_kept(graph_module)
        return compile_fx_inner(graph_module, inputs, **kwargs)

    return compile_fx(gm, example_inputs, inner_compile=inner_compile,
                      decompositions=decompositions)
