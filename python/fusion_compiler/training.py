"""Runs a compiled partition under autograd: its forward and backward on the
compiled kernels.

A call of a partition that needs gradients goes through `PartitionFunction`,
a torch.autograd.Function: its forward runs the training forward
(`emit_grad.Training`: the partition's outputs, the norms' statistics and
the intermediates the backward reads) and saves what the backward reads;
its backward runs the backward program written for the inputs that need
gradients (`ctx.needs_input_grad`), compiled at the first backward that asks
for that set (the one for every input is compiled with the partition), and
computes in PyTorch only what the dialect cannot write (column sums). A
partition with activations trains in pieces between them
(`PiecewiseGradients`): the dialect has no op for an activation's gradient.
"""

from __future__ import annotations

import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from .calls import CompiledPartition
from .emit_grad import Backward, Training, emit_backward
from .toolchain import FusionCompileError, Tools, compile_library


class PartitionGradients:
    """The compiled training programs of one partition."""

    def __init__(self, training: Training, target: str, tools: Tools):
        self.training = training
        self.tools = tools
        self.target = target  # "cpu" or the chip (the programs' own: a chip)
        self.outputs = len(training.written.outputs)
        self.forward = self._load(training.forward)
        self._backward: Dict[Tuple[bool, ...], Tuple[Backward, Optional[CompiledPartition]]] = {}
        full = (True,) * len(training.written.placeholders)
        self._backward[full] = (training.full, self._load(training.full.program))

    @property
    def libraries(self) -> List[str]:
        """The libraries compiled so far: the forward's, then the backwards'."""
        runners = [self.forward] + [r for _, r in self._backward.values() if r is not None]
        return [r.library_path for r in runners]

    def _load(self, program) -> Optional[CompiledPartition]:
        if program is None:
            return None
        lib = compile_library(program.mlir, self.target, tools=self.tools)
        return CompiledPartition(program, lib.path, self.target, self.tools.runtime_library)

    def backward_for(self, needs: Tuple[bool, ...]):
        """(Backward, its runner) for the inputs flagged in `needs`, compiled
        now the first time. Where it cannot be compiled (a machine with the
        libraries but not the compiler), the backward for every input
        serves, its extra gradients dropped."""
        entry = self._backward.get(needs)
        if entry is None:
            backward = emit_backward(self.training.written, needs, self.training.target)
            try:
                entry = (backward, self._load(backward.program))
            except (FusionCompileError, OSError) as error:
                warnings.warn(f"{backward.program.name}: the backward for inputs {needs} "
                              f"could not be compiled, the one for every input serves: "
                              f"{str(error).splitlines()[0]}")
                full, runner = self._backward[(True,) * len(needs)]
                entry = (Backward(full.program, full.reads, [
                    terms if need else [] for terms, need in zip(full.gradients, needs)],
                    full.pytorch, full.ops), runner)
            self._backward[needs] = entry
        return entry

    def run_forward(self, args: Sequence[torch.Tensor]):
        """(outputs, the tensors to save) of the training forward on `args`."""
        outs = self.forward.run(*args)
        mine = {"input": args, "output": outs[:self.outputs], "extra": outs[self.outputs:]}
        return outs[:self.outputs], [mine[kind][i] for kind, i in self.training.saved]

    def run_backward(self, needs: Tuple[bool, ...], saved: Sequence[torch.Tensor],
                     grads: Sequence[torch.Tensor], inputs: Sequence[Tuple[torch.Size,
                                                                          torch.dtype]]):
        """The gradients of the partition's inputs (None where not needed)."""
        backward, runner = self.backward_for(needs)
        index = {source: i for i, source in enumerate(self.training.saved)}
        args = [grads[key[1]] if key[0] == "grad" else saved[index[self.training.sources[key]]]
                for key in backward.reads]
        results = runner.run(*args) if runner is not None else ()
        out: List[Optional[torch.Tensor]] = []
        for (shape, dtype), terms in zip(inputs, backward.gradients):
            total = None
            for how, (where, i) in terms:
                t = results[i] if where == "result" else grads[i]
                if how == "colsum":
                    t = t.reshape(-1, t.shape[-1]).sum(0, dtype=torch.float32)
                t = t.reshape(shape)
                total = t if total is None else total + t
            out.append(total.to(dtype) if total is not None else None)
        return out


class PiecewiseGradients:
    """A partition's training in pieces (fusion_compiler._gradients_in_pieces):
    its graph with each piece between its activations a compiled partition
    with its own training programs (a PartitionFunction under autograd),
    and the activations, and the products they feed, PyTorch's autograd
    ops between them. Called as the partition is."""

    def __init__(self, pieces: torch.fx.GraphModule):
        self.pieces = pieces  # not a submodule of the partition: a plain attribute

    def __call__(self, *args: torch.Tensor):
        return self.pieces(*args)


class PartitionFunction(torch.autograd.Function):
    """A partition's call under autograd, on the compiled kernels."""

    @staticmethod
    def forward(ctx, gradients: PartitionGradients, *args: torch.Tensor):
        outs, saved = gradients.run_forward(args)
        ctx.gradients = gradients
        ctx.inputs = [(a.shape, a.dtype) for a in args]
        ctx.save_for_backward(*saved)
        return tuple(outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads: torch.Tensor):
        needs = tuple(ctx.needs_input_grad[1:])
        return (None, *ctx.gradients.run_backward(needs, ctx.saved_tensors, grads, ctx.inputs))
