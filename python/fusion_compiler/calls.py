"""Runs a compiled partition inside the PyTorch graph that replaced it.

A `CompiledPartition` is the module the partition's call node calls: it
flattens the token dimensions of its activations, allocates the outputs,
calls the library (a GPU library through the runtime's loader, on PyTorch's
current stream and without synchronizing; a CPU library directly) and gives
the outputs their model shapes back.
"""

from __future__ import annotations

import ctypes
import json
from typing import Dict, List, Optional, Sequence

import torch

from .emit import Program, TensorArg

ALIGNMENT_BYTES = 16

# Allocates the outputs of a call (a test replaces it to poison them with NaN,
# so that an element a kernel does not write shows).
_allocate = torch.empty


def _memref_words(t: torch.Tensor) -> List[int]:
    shape = [int(s) for s in t.shape]
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    p = t.data_ptr()
    return [p, p, 0, *shape, *strides]


class _CpuFunction:
    """A function of a CPU library (fusion-compile --cpu): same ABI, host memory."""

    def __init__(self, path: str, name: str):
        import fusion_runtime  # the runtime's loader, shipped with this package
        self._cdll = ctypes.CDLL(path)
        self._fn = getattr(self._cdll, name)
        self._fn.restype = None
        self._name = name
        # The library's description: its tensors' sizes checked as the GPU
        # loader checks them (the dynamic sizes the function ties included).
        description = fusion_runtime.library_signatures(path).get(name)
        self._specs = fusion_runtime.parse_signature(description) if description else None
        self._checked = set()

    def __call__(self, *tensors: torch.Tensor) -> None:
        if self._specs is not None:
            shapes = tuple(tuple(t.shape) for t in tensors)
            if shapes not in self._checked:
                import fusion_runtime
                fusion_runtime.check_shapes(self._specs, shapes, self._name)
                self._checked.add(shapes)
        words: List[int] = []
        for t in tensors:
            words += _memref_words(t)
        if self._fn.argtypes is None:
            self._fn.argtypes = [ctypes.c_int64] * len(words)
        self._fn(*words)


_LIBRARIES: Dict[tuple, object] = {}


def _gpu_function(path: str, name: str, runtime_library: Optional[str]):
    import fusion_runtime  # the runtime's loader, shipped with this package
    library = _LIBRARIES.get((path, runtime_library))
    if library is None:
        library = _LIBRARIES[(path, runtime_library)] = fusion_runtime.Library(
            path, runtime=runtime_library)
    return library.function(name)


_TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
                 "f64": torch.float64}


def _prepared_outputs(signature: str) -> List[tuple]:
    """(shape, dtype) of each result in a library function's description."""
    import fusion_runtime  # the runtime's loader, shipped with this package
    return [(tuple(spec.shape), _TORCH_DTYPES[spec.dtype])
            for spec in fusion_runtime.parse_signature(signature)
            if spec.name and spec.name.startswith("result")]


def _capturing(device) -> bool:
    """Whether the current stream of `device` is capturing a CUDA graph."""
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _same_weight(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether `a` is the weight `b`: the same tensor, or the same view of
    the same one (the rows of a fused gate_up weight, sliced anew by every
    call: patterns._match_gate_up), which shares its version counter."""
    if a is b:
        return True
    base = a._base
    return base is not None and base is b._base and a.storage_offset() == b.storage_offset() \
        and a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype


class _WeightPreparation:
    """What the partition computes from its weights alone (Lazy Pre-Norm's
    weight folds: `fusion-outline-weight-prep` moved them into the library's
    `<function>_prepare`), computed again only when a weight changed: a
    weight is another tensor than the last preparation's (compared by
    identity, the last ones held, so that a tensor computed anew at the
    same address is not taken for the old one; a view by its base's
    identity and where it looks), or its version counter
    (bumped by every in-place update: an optimizer step, `load_state_dict`,
    `copy_`) or device moved on. A call inside a CUDA graph capture
    prepares, so that the graph replays the preparation with its weights,
    unless the weights are frozen (`frozen`: inference, as Inductor's
    freezing) and the kept preparation is current: the graph then reads the
    kept values, and its replays do not see a later in-place update (calls
    outside a graph still do). The prepared tensors are kept (one copy of
    each folded weight) and rewritten in place on the caller's stream; a
    call on another stream first waits for the preparation, and a new
    preparation first waits for every stream that used the old one."""

    def __init__(self, fn, weights: List[int], outputs: List[tuple], frozen: bool = False):
        self._fn = fn
        self.frozen = frozen       # a capture reuses a current preparation
        self.weights = weights     # the partition's weight inputs, by index
        self.outputs = outputs     # (shape, dtype) of each prepared value
        self.calls = 0             # preparations run (for tests)
        self._tensors: tuple = ()  # the weights of the last preparation (held)
        self._key = None           # and their versions and device
        self._prepared: List[torch.Tensor] = []
        self._ready = None         # CUDA: the event after the last preparation
        self._streams: list = []   # CUDA: the streams that used it since

    def _version_key(self, args, device):
        try:
            return (device,) + tuple(args[i]._version for i in self.weights)
        except RuntimeError:  # an inference-mode tensor has no version counter
            return None

    def prepared(self, args, flat, device) -> List[torch.Tensor]:
        capturing = _capturing(device)
        key = self._version_key(args, device)
        tensors = tuple(args[i] for i in self.weights)
        same = len(tensors) == len(self._tensors) and all(
            _same_weight(a, b) for a, b in zip(tensors, self._tensors))
        if capturing:
            if self.frozen and key is not None and key == self._key and same:
                return self._prepared  # the graph reads the kept preparation
            # Recorded in the graph, not run now: the next call outside a
            # capture prepares again.
            key = None
        stream = torch.cuda.current_stream(device) if device.type == "cuda" else None
        if key is None or key != self._key or not same:
            if stream is not None and not capturing:
                for other in self._streams:  # the old values' last readers
                    if other != stream:
                        stream.wait_stream(other)
            if not self._prepared or self._prepared[0].device != device:
                self._prepared = [torch.empty(shape, dtype=dtype, device=device)
                                  for shape, dtype in self.outputs]
            self._fn(*(flat[i] for i in self.weights), *self._prepared)
            self.calls += 1
            self._key, self._tensors = key, tensors
            if stream is not None and not capturing:
                self._ready = torch.cuda.Event()
                self._ready.record(stream)
                self._streams = [stream]
        elif stream is not None and stream not in self._streams and not capturing:
            stream.wait_event(self._ready)  # prepared on another stream
            self._streams.append(stream)
        return self._prepared


class CompiledPartition(torch.nn.Module):
    calls = 0  # calls that ran a library, over all partitions (for tests and debugging)

    def __init__(self, program: Program, library_path: str, target: str,
                 runtime_library: Optional[str] = None, frozen_weights: bool = False):
        super().__init__()
        self.program = program
        self.library_path = library_path
        self.target = target
        self.runtime_library = runtime_library
        self.frozen_weights = frozen_weights
        self._plans: Dict[tuple, tuple] = {}
        self._fn = self._function(program.name)
        # The weights' preparation, where the library has one (a partition
        # compiled with cache_weight_folds=True whose program has a fold).
        self._preparation: Optional[_WeightPreparation] = None
        import fusion_runtime  # the runtime's loader, shipped with this package
        prepare = fusion_runtime.library_signatures(library_path).get(
            program.name + "_prepare")
        if prepare is not None:
            weights = [i for i, a in enumerate(program.inputs) if a.static]
            self._preparation = _WeightPreparation(
                self._function(program.name + "_prepare"), weights,
                _prepared_outputs(prepare), frozen=frozen_weights)
        # An output's leading (token) dimensions: those of the first
        # activation input with the same ones in the example.
        self._lead_from: List[Optional[int]] = []
        for out in program.outputs:
            match = next((i for i, a in enumerate(program.inputs)
                          if a.activation and a.shape[:-1] == out.shape[:-1]), None)
            self._lead_from.append(match)

    def _function(self, name: str):
        if self.target == "cpu":
            return _CpuFunction(self.library_path, name)
        return _gpu_function(self.library_path, name, self.runtime_library)

    def _check(self, i: int, t: torch.Tensor) -> None:
        spec = self.program.inputs[i]
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{self.program.name}: input {i}: expected a tensor, got {type(t)}")
        if t.dtype != spec.dtype:
            raise TypeError(f"{self.program.name}: input {i}: expected {spec.dtype}, got {t.dtype}")
        on_gpu = t.device.type == "cuda"
        if on_gpu != (self.target != "cpu"):
            raise ValueError(f"{self.program.name}: input {i} is on {t.device}, but the "
                             f"partition was compiled for {self.target}")
        if spec.activation:
            if t.dim() < 2 or t.shape[-1] != spec.features:
                raise ValueError(f"{self.program.name}: input {i}: expected [..., "
                                 f"{spec.features}], got {list(t.shape)}")
        elif spec.table:
            if t.dim() < 2 or t.shape[-1] != spec.features:
                raise ValueError(f"{self.program.name}: input {i}: expected a table per "
                                 f"position, [..., {spec.features}], got {list(t.shape)}")
        elif spec.per_row:
            if t.dim() != 1:
                raise ValueError(f"{self.program.name}: input {i}: expected a statistic per "
                                 f"row, [tokens], got {list(t.shape)}")
        elif tuple(t.shape) != spec.shape:
            raise ValueError(f"{self.program.name}: input {i}: expected {list(spec.shape)}, "
                             f"got {list(t.shape)}")

    def output_shapes(self, args: Sequence[torch.Tensor]) -> List[tuple]:
        """The model shapes of the outputs of a call with `args`."""
        tokens = None
        for t, spec in zip(args, self.program.inputs):
            if spec.activation or spec.per_row:
                tokens = t.numel() // spec.features if spec.activation else t.numel()
                break
        shapes = []
        for spec, source in zip(self.program.outputs, self._lead_from):
            if spec.per_row:
                shapes.append((tokens,))
                continue
            if not spec.activation:
                shapes.append(tuple(spec.shape))
                continue
            lead = tuple(args[source].shape[:-1]) if source is not None else spec.shape[:-1]
            if source is None and int(torch.Size(lead).numel()) != tokens:
                lead = (tokens,)
            shapes.append((*lead, spec.features))
        return shapes

    def forward(self, *args: torch.Tensor):
        if torch.is_grad_enabled() and any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in args):
            gradients = getattr(self, "gradients", None)
            if callable(gradients):
                # In pieces between the activations (training.PiecewiseGradients),
                # each piece's training forward and backward on our kernels.
                return gradients(*args)
            if gradients is not None:
                # The training forward, and the backward on our kernels.
                from .training import PartitionFunction
                outs = PartitionFunction.apply(gradients, *args)
                return outs[0] if self.program.single_output else outs
            fallback = getattr(self, "fallback", None)
            if fallback is not None:
                # No backward compiled: autograd gets PyTorch's ops.
                return fallback(*args)
        outs = self.run(*args)
        return outs[0] if self.program.single_output else outs

    def run(self, *args: torch.Tensor):
        """The library's call: a tuple of outputs in their model shapes.

        The first call with given shapes, dtypes and devices checks every
        input and keeps a plan (the flattened views, the outputs' sizes);
        a repeated call only makes views, allocates the outputs and calls."""
        try:
            key = tuple((t.shape, t.dtype, t.device) for t in args)
            plan = self._plans.get(key)
        except (AttributeError, TypeError):
            key, plan = None, None
        if plan is None:
            plan = self._plan(args)
            if key is not None:
                if len(self._plans) >= 64:
                    self._plans.clear()
                self._plans[key] = plan
        flat_shapes, allocs, shapes, device = plan
        flat = []
        for t, f in zip(args, flat_shapes):
            if f is not None:
                t = t.reshape(f)
            if not t.is_contiguous():
                t = t.contiguous()
            if t.data_ptr() & (ALIGNMENT_BYTES - 1):
                t = t.clone()
            flat.append(t)
        prepared = (self._preparation.prepared(args, flat, device)
                    if self._preparation is not None else ())
        outs = [_allocate(shape, dtype=dtype, device=device) for shape, dtype in allocs]
        self._fn(*flat, *prepared, *outs)
        CompiledPartition.calls += 1
        return tuple(out.view(shape) for out, shape in zip(outs, shapes))

    def _plan(self, args):
        prog = self.program
        if len(args) != len(prog.inputs):
            raise TypeError(f"{prog.name}: expected {len(prog.inputs)} inputs, got {len(args)}")
        tokens = None
        for i, (t, spec) in enumerate(zip(args, prog.inputs)):
            self._check(i, t)
            if spec.activation or spec.per_row:
                count = t.numel() // spec.features if spec.activation else t.numel()
                if tokens is None:
                    tokens = count
                elif count != tokens:
                    raise ValueError(f"{prog.name}: input {i} has {count} tokens, "
                                     f"another {tokens}")
        flat_shapes = tuple((-1, spec.features) if spec.activation or spec.table
                            else (-1,) if spec.per_row else None for spec in prog.inputs)
        allocs = tuple(((tokens, o.features) if o.activation else (tokens,) if o.per_row
                        else tuple(o.shape), o.dtype) for o in prog.outputs)
        device = args[0].device if args else torch.device("cpu")
        return flat_shapes, allocs, tuple(self.output_shapes(args)), device

    def extra_repr(self) -> str:
        ops = ", ".join(op for op, _ in self.program.ops)
        return f"{self.program.name} [{ops}] for {self.target} ({self.library_path})"


# The partitions as one PyTorch operator, so that a graph calling them can
# be compiled by Inductor (which calls the operator as an extern kernel and
# compiles everything around it). The operator's key describes the partition
# whole (library, function, arguments), so that code Inductor or AOTAutograd
# cached in another process finds it too.
_REGISTRY: Dict[str, CompiledPartition] = {}


def _spec(arg: TensorArg) -> list:
    return [str(arg.dtype).replace("torch.", ""), list(arg.shape), arg.activation]


def register(partition: CompiledPartition) -> str:
    p = partition.program
    key = json.dumps(dict(library=partition.library_path, function=p.name,
                          target=partition.target, runtime=partition.runtime_library,
                          inputs=[_spec(a) for a in p.inputs],
                          outputs=[_spec(a) for a in p.outputs], single=p.single_output,
                          frozen=partition.frozen_weights),
                     sort_keys=True)
    _REGISTRY[key] = partition
    return key


def _partition_of(key: str) -> CompiledPartition:
    part = _REGISTRY.get(key)
    if part is None:
        d = json.loads(key)

        def args(specs):
            return [TensorArg(getattr(torch, t), tuple(shape), act) for t, shape, act in specs]
        program = Program(d["function"], "", args(d["inputs"]), args(d["outputs"]), d["single"])
        part = _REGISTRY[key] = CompiledPartition(program, d["library"], d["target"],
                                                  d["runtime"], d.get("frozen", False))
    return part


# A plain operator (torch.library.Library rather than custom_op: one Python
# call per call, without custom_op's autograd and device wrappers, which cost
# more host time than a small layer's kernels). It has no autograd formula:
# it is called inside AOTAutograd's forward graphs, on detached inputs.
_LIBRARY = torch.library.Library("fusion_compiler", "DEF")
_LIBRARY.define("run_partition(str key, Tensor[] inputs) -> Tensor[]")


def run_partition(key: str, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
    """Runs the registered partition `key` on `inputs`: its outputs."""
    return list(_partition_of(key).run(*inputs))


_LIBRARY.impl("run_partition", run_partition, "CompositeExplicitAutograd")


@torch.library.register_fake("fusion_compiler::run_partition")
def _(key: str, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
    part = _partition_of(key)
    device = inputs[0].device if inputs else torch.device("cpu")
    return [torch.empty(shape, dtype=spec.dtype, device=device)
            for shape, spec in zip(part.output_shapes(inputs), part.program.outputs)]
