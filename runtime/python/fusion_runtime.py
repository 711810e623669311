"""Call libraries compiled by the fusion compiler on PyTorch CUDA tensors.

No build step: this module uses ctypes only, and imports torch lazily (only to
read the current device and stream), so it imports where torch is absent.

Calling convention of a compiled function
-----------------------------------------
A compiled library exports its host function as a C symbol that returns
nothing and takes, for each tensor argument in order, MLIR's expanded memref
descriptor (what lowered host code takes for a `memref<d0 x ... x T>`):

    void *allocated, void *aligned, int64_t offset,
    int64_t sizes[rank] (outermost first), int64_t strides[rank] (elements)

Outputs are arguments too (destination passing): the caller allocates them.
The loader passes the tensor's data pointer as both pointers, offset 0, the
tensor's sizes and its row-major strides. The function reports failures
through the runtime's per-thread status (runtime/README.md), which the loader
reads after every call and turns into FusionRuntimeError.

A compiled library describes each function it exports in a NUL-terminated
string symbol `__fusion_signature_<function>` (the prefix is reserved: the
compiler refuses user functions starting with `__`), e.g.
"arg0: bf16[?,1024]; arg1: bf16[1024,1024]; result0: bf16[?,1024]": the
arguments, then the results as the output arguments the caller passes, each a
dtype (bf16 f16 f32 f64 i8 u8 i16 i32 i64 i1) and sizes, each an integer, a
name that must stand for the same size wherever it appears, or `?` for any
size. Library.function(name) reads it; a signature given by hand (for a
library without descriptions, or to name dynamic sizes) is checked against it.

Example:

    lib = fusion_runtime.Library("libgemm.so")
    gemm = lib.function("gemm")            # its description
    gemm(a, b, c)
"""

from __future__ import annotations

import array
import ctypes
import ctypes.util
import errno
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

__all__ = [
    "ArgumentError",
    "Function",
    "FusionRuntimeError",
    "Library",
    "Runtime",
    "TensorSpec",
    "check_arguments",
    "check_shapes",
    "library_signatures",
    "memref_words",
    "merge_signatures",
    "parse_signature",
]

Dim = Union[int, str, None]

# Signature dtype -> (torch dtype as str(), bytes per element).
DTYPES: Dict[str, Tuple[str, int]] = {
    "bf16": ("torch.bfloat16", 2),
    "f16": ("torch.float16", 2),
    "f32": ("torch.float32", 4),
    "f64": ("torch.float64", 8),
    "i8": ("torch.int8", 1),
    "u8": ("torch.uint8", 1),
    "i16": ("torch.int16", 2),
    "i32": ("torch.int32", 4),
    "i64": ("torch.int64", 8),
    "i1": ("torch.bool", 1),
}

# Signature dtype -> fusionrtDataType (CUtensorMapDataType).
TENSOR_MAP_DTYPES: Dict[str, int] = {
    "u8": 0, "i32": 3, "i64": 5, "f16": 6, "f32": 7, "f64": 8, "bf16": 9,
}

STATUS_NAMES = {
    0: "success",
    1: "invalid argument",
    2: "CUDA error",
    3: "limit exceeded",
    4: "unsupported",
}

ALIGNMENT_BYTES = 16
RUNTIME_LIBRARY_ENV = "FUSION_RUNTIME_LIBRARY"

# fusionrtInvoke's packet (fusion_runtime.h): a header, then the function's words.
INVOKE_HEADER_WORDS = 5
INVOKE_MAX_WORDS = 256
INVOKE_CALL_STREAM = 1
INVOKE_SYNCHRONIZE = 2
INVOKE_NOT_CALLED = 0x100
# Calls with different shapes, dtypes or devices keep a plan each, up to this many.
MAX_PLANS = 64


class FusionRuntimeError(RuntimeError):
    """A failure the runtime reported; `status` is a fusionrtStatus value."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(f"{message} [{STATUS_NAMES.get(status, f'status {status}')}]")


class ArgumentError(ValueError):
    """A tensor argument that does not match the function's signature."""


# --------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorSpec:
    """One tensor argument: dtype, sizes (int, size name or None), name."""

    dtype: str
    shape: Tuple[Dim, ...]
    name: Optional[str] = None

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(
                f"expected a dtype in {', '.join(DTYPES)}, but got '{self.dtype}'")
        for size in self.shape:
            if not (size is None or (isinstance(size, int) and size >= 0)
                    or (isinstance(size, str) and size.isidentifier())):
                raise ValueError(
                    f"expected sizes that are integers >= 0, names or None, but got {size!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def torch_dtype(self) -> str:
        return DTYPES[self.dtype][0]

    @property
    def element_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    def __str__(self) -> str:
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        prefix = f"{self.name}: " if self.name else ""
        return f"{prefix}{self.dtype}[{dims}]"


_ENTRY = re.compile(r"^\s*(?:(?P<name>[A-Za-z_]\w*)\s*:)?\s*(?P<dtype>\w+)\s*"
                    r"\[(?P<dims>[^\]]*)\]\s*$")


def parse_signature(text: str) -> List[TensorSpec]:
    """Parses "a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]" (names optional)."""
    specs = []
    for index, entry in enumerate(part for part in text.split(";") if part.strip()):
        match = _ENTRY.match(entry)
        if not match:
            raise ValueError(
                f"signature entry {index}: expected 'name: dtype[d0,d1,...]', but got "
                f"'{entry.strip()}'")
        dims: List[Dim] = []
        for token in (t.strip() for t in match["dims"].split(",") if match["dims"].strip()):
            if token == "?":
                dims.append(None)
            elif token.isdigit():
                dims.append(int(token))
            elif token.isidentifier():
                dims.append(token)
            else:
                raise ValueError(
                    f"signature entry {index}: expected a size, a size name or '?', but got "
                    f"'{token}'")
        try:
            specs.append(TensorSpec(match["dtype"], tuple(dims), match["name"]))
        except ValueError as error:
            raise ValueError(f"signature entry {index}: {error}") from None
    return specs


# --------------------------------------------------------------------------
# Argument checks (pure Python: no GPU, no torch needed)
# --------------------------------------------------------------------------


def _row_major_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))


def _device_str(device: Any) -> str:
    return str(device)


def _label(index: int, spec: TensorSpec) -> str:
    return f"argument {index} ('{spec.name}')" if spec.name else f"argument {index}"


def check_arguments(specs: Sequence[TensorSpec], tensors: Sequence[Any],
                    function: str = "function") -> Dict[str, int]:
    """Checks tensors against specs; returns the sizes bound to size names.

    Checks, in order: the number of arguments; per argument that it is a
    tensor, its dtype, rank and sizes, row-major contiguity (as
    torch.Tensor.is_contiguous: size-1 dimensions, and tensors without
    elements, may have any strides), that it is on a CUDA device (the same
    for all), and 16-byte alignment of its data pointer. Each argument is
    checked whole before the next one.
    Raises TypeError or ArgumentError naming the argument and the expected and
    given values.
    """
    return _checked_words(specs, tensors, function)[0]


def _check_sizes(specs: Sequence[TensorSpec], index: int, shape: Tuple[int, ...],
                 bound: Dict[str, Tuple[int, int, int]], label: Callable[[], str]) -> None:
    """Argument `index`'s rank and sizes against its spec: static sizes
    equal, a named size equal to where the name was first bound (recorded in
    `bound`: name -> (size, argument, dimension)). `label` builds the
    message's prefix, only on failure."""
    spec = specs[index]
    if len(shape) != spec.rank:
        raise ArgumentError(
            f"{label()}: expected rank {spec.rank} (shape {spec}), but got rank {len(shape)} "
            f"(shape {list(shape)})")
    for dim, (want, got) in enumerate(zip(spec.shape, shape)):
        if want.__class__ is int:
            if want != got:
                raise ArgumentError(
                    f"{label()}: expected size {want} in dimension {dim}, but got {got}")
        elif isinstance(want, str):
            seen = bound.get(want)
            if seen is None:
                bound[want] = (got, index, dim)
            elif seen[0] != got:
                value, where_index, where_dim = seen
                where = f"{_label(where_index, specs[where_index])} dimension {where_dim}"
                raise ArgumentError(
                    f"{label()}: expected size {want} = {value} in dimension {dim} (bound by "
                    f"{where}), but got {got}")


def _check_count(specs: Sequence[TensorSpec], count: int, function: str) -> None:
    if count != len(specs):
        raise TypeError(
            f"{function}: expected {len(specs)} tensor arguments "
            f"({'; '.join(str(s) for s in specs)}), but got {count}")


def check_shapes(specs: Sequence[TensorSpec], shapes: Sequence[Sequence[int]],
                 function: str) -> Dict[str, int]:
    """The size checks of check_arguments alone, on shapes (a CPU library's
    call, whose tensors are host memory): the number of arguments, each
    one's rank and static sizes, and the sizes bound to names (the sizes the
    function ties). Returns the bound sizes; raises TypeError or
    ArgumentError with check_arguments' messages."""
    _check_count(specs, len(shapes), function)
    bound: Dict[str, Tuple[int, int, int]] = {}
    for index, shape in enumerate(shapes):
        _check_sizes(specs, index, tuple(int(d) for d in shape), bound,
                     lambda: f"{function}: {_label(index, specs[index])}")
    return {name: size for name, (size, _, _) in bound.items()}


_TENSOR_ATTRS = ("data_ptr", "shape", "stride", "dtype", "device")


def _checked_words(specs: Sequence[TensorSpec], tensors: Sequence[Any],
                   function: str) -> Tuple[Dict[str, int], List[int]]:
    """check_arguments, and the expanded memref descriptors of the checked
    tensors (memref_words of each, in order), in one pass. Messages are
    built only on failure: this runs on every call."""
    _check_count(specs, len(tensors), function)
    bound: Dict[str, Tuple[int, int, int]] = {}  # name -> (size, argument, dimension)
    words: List[int] = []
    device = None
    torch = _torch_module or None
    tensor_type = torch.Tensor if torch is not None else None
    for index, (spec, tensor) in enumerate(zip(specs, tensors)):
        def label() -> str:
            return f"{function}: {_label(index, spec)}"
        if not (tensor_type is not None and isinstance(tensor, tensor_type)) and \
                not all(hasattr(tensor, attr) for attr in _TENSOR_ATTRS):
            raise TypeError(f"{label()}: expected a torch.Tensor, but got {type(tensor).__name__}")
        if str(tensor.dtype) != spec.torch_dtype:
            raise ArgumentError(
                f"{label()}: expected dtype {spec.torch_dtype} ({spec.dtype}), but got "
                f"{tensor.dtype}")
        shape = tuple(int(s) for s in tensor.shape)
        _check_sizes(specs, index, shape, bound, label)
        strides = tuple(int(s) for s in tensor.stride())
        expected = _row_major_strides(shape)
        # As torch.Tensor.is_contiguous: the stride of a size-1 dimension,
        # and every stride of a tensor without elements, address nothing
        # (the function gets the row-major strides either way). Asking for
        # .contiguous() there would not help: torch returns the same view.
        if strides != expected and 0 not in shape and any(
                size > 1 and got != want for size, got, want in zip(shape, strides, expected)):
            raise ArgumentError(
                f"{label()}: expected row-major contiguous strides {expected}, but got "
                f"{strides}; pass .contiguous()")
        tensor_device = tensor.device
        if getattr(tensor_device, "type", None) != "cuda":
            raise ArgumentError(
                f"{label()}: expected a CUDA tensor, but got a tensor on {tensor_device}")
        if device is None:
            device = tensor_device
        elif tensor_device != device and _device_str(tensor_device) != _device_str(device):
            raise ArgumentError(
                f"{label()}: expected device {device} (the device of argument 0), but got "
                f"{tensor_device}")
        pointer = int(tensor.data_ptr())
        if pointer % ALIGNMENT_BYTES:
            offset = tensor.storage_offset() if hasattr(tensor, "storage_offset") else "?"
            raise ArgumentError(
                f"{label()}: expected a data pointer aligned to {ALIGNMENT_BYTES} bytes, but got "
                f"{pointer:#x} (storage offset {offset} elements); pass .clone()")
        words += (pointer, pointer, 0, *shape, *expected)
    return {name: value for name, (value, _, _) in bound.items()}, words


def memref_words(tensor: Any) -> List[int]:
    """The expanded memref descriptor of a checked tensor, as integers:
    allocated, aligned, offset, sizes..., strides... (row-major)."""
    shape = tuple(int(s) for s in tensor.shape)
    pointer = int(tensor.data_ptr())
    return [pointer, pointer, 0, *shape, *_row_major_strides(shape)]


def _memref_argtypes(spec: TensorSpec) -> List[Any]:
    return [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64] + [ctypes.c_int64] * (2 * spec.rank)


# --------------------------------------------------------------------------
# The runtime library
# --------------------------------------------------------------------------


class _DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("ordinal", ctypes.c_int),
        ("name", ctypes.c_char * 256),
        ("computeCapabilityMajor", ctypes.c_int),
        ("computeCapabilityMinor", ctypes.c_int),
        ("multiprocessorCount", ctypes.c_int),
        ("maxThreadsPerBlock", ctypes.c_int),
        ("warpSize", ctypes.c_int),
        ("maxSharedMemoryPerBlock", ctypes.c_int),
        ("maxSharedMemoryPerBlockOptin", ctypes.c_int),
        ("maxSharedMemoryPerMultiprocessor", ctypes.c_int),
        ("l2CacheBytes", ctypes.c_int),
        ("clusterLaunch", ctypes.c_int),
        ("tensorMapSupported", ctypes.c_int),
        ("totalGlobalMemoryBytes", ctypes.c_uint64),
    ]


class _TensorMapSpec(ctypes.Structure):
    _fields_ = [
        ("dataType", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("globalAddress", ctypes.c_void_p),
        ("sizes", ctypes.c_int64 * 5),
        ("strides", ctypes.c_int64 * 5),
        ("boxSizes", ctypes.c_int32 * 5),
        ("elementStrides", ctypes.c_int32 * 5),
        ("swizzle", ctypes.c_int),
        ("interleave", ctypes.c_int),
        ("l2Promotion", ctypes.c_int),
        ("oobFill", ctypes.c_int),
    ]


SWIZZLES = {None: 0, 0: 0, 32: 1, 64: 2, 128: 3}


class Runtime:
    """The fusion runtime (libfusion_runtime.so): status and device queries."""

    def __init__(self, cdll: ctypes.CDLL):
        self.cdll = cdll
        signatures = {
            "fusionrtGetLastError": ([], ctypes.c_char_p),
            "fusionrtPeekStatus": ([], ctypes.c_int),
            "fusionrtClearStatus": ([], ctypes.c_int),
            "fusionrtSetDevice": ([ctypes.c_int], ctypes.c_int),
            "fusionrtGetDevice": ([], ctypes.c_int),
            "fusionrtInit": ([ctypes.c_int], ctypes.c_int),
            "fusionrtGetDeviceCount": ([ctypes.POINTER(ctypes.c_int)], ctypes.c_int),
            "fusionrtGetDeviceInfo": ([ctypes.c_int, ctypes.POINTER(_DeviceInfo)], ctypes.c_int),
            "fusionrtEncodeTensorMap": ([ctypes.POINTER(_TensorMapSpec), ctypes.c_void_p],
                                        ctypes.c_int),
            "fusionrtReleaseCachedMemory": ([], ctypes.c_int),
            "fusionrtSetCallStream": ([ctypes.c_void_p], ctypes.c_int),
            "fusionrtClearCallStream": ([], ctypes.c_int),
            "mgpuStreamSynchronize": ([ctypes.c_void_p], None),
        }
        for name, (argtypes, restype) in signatures.items():
            function = getattr(cdll, name)
            function.argtypes = argtypes
            function.restype = restype
        # One foreign call per compiled-function call (absent from runtimes
        # built before it; calls then take the long way).
        self.invoke = getattr(cdll, "fusionrtInvoke", None)
        if self.invoke is not None:
            self.invoke.argtypes = [ctypes.c_void_p]
            self.invoke.restype = ctypes.c_int32

    @classmethod
    def find(cls, path: Optional[str] = None) -> Optional["Runtime"]:
        """Loads the runtime from `path`, $FUSION_RUNTIME_LIBRARY or the
        library search path; None when none of them names one."""
        path = path or os.environ.get(RUNTIME_LIBRARY_ENV) or ctypes.util.find_library(
            "fusion_runtime")
        if not path:
            return None
        # Global, so that a compiled library loaded afterwards binds its mgpu* calls to it.
        return cls(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))

    def last_error(self) -> str:
        return (self.cdll.fusionrtGetLastError() or b"").decode(errors="replace")

    def peek_status(self) -> int:
        return self.cdll.fusionrtPeekStatus()

    def clear_status(self) -> int:
        return self.cdll.fusionrtClearStatus()

    def check(self, context: str = "") -> None:
        """Reads and clears this thread's pending status; raises on a failure."""
        status = self.clear_status()
        if status:
            message = self.last_error()
            raise FusionRuntimeError(status, f"{context}: {message}" if context else message)

    def _returned(self, status: int) -> None:
        if status:
            raise FusionRuntimeError(status, self.last_error())

    def set_device(self, device: int) -> None:
        self._returned(self.cdll.fusionrtSetDevice(device))

    def init(self, device: int = 0) -> None:
        self._returned(self.cdll.fusionrtInit(device))

    def release_cached_memory(self) -> None:
        """Returns the memory cached for the compiled code's workspaces and
        intermediates to the driver (like torch.cuda.empty_cache())."""
        self._returned(self.cdll.fusionrtReleaseCachedMemory())

    def device_count(self) -> int:
        count = ctypes.c_int(0)
        self._returned(self.cdll.fusionrtGetDeviceCount(ctypes.byref(count)))
        return count.value

    def device_info(self, device: int = 0) -> Dict[str, Any]:
        info = _DeviceInfo()
        self._returned(self.cdll.fusionrtGetDeviceInfo(device, ctypes.byref(info)))
        result = {name: getattr(info, name) for name, _ in _DeviceInfo._fields_}
        result["name"] = info.name.decode(errors="replace")
        return result

    def encode_tensor_map(self, tensor: Any, box: Sequence[int], swizzle: Optional[int] = 128,
                          dtype: Optional[str] = None) -> bytes:
        """Encodes a tiled tensor map (TMA descriptor) over a row-major tensor;
        returns its 128 bytes. `swizzle` is None, 32, 64 or 128 (bytes)."""
        if dtype is None:
            names = {torch_name: short for short, (torch_name, _) in DTYPES.items()}
            dtype = names.get(str(tensor.dtype))
        if dtype not in TENSOR_MAP_DTYPES:
            raise ArgumentError(
                f"expected a tensor-map dtype in {', '.join(TENSOR_MAP_DTYPES)}, but got "
                f"{tensor.dtype}")
        if swizzle not in SWIZZLES:
            raise ArgumentError(f"expected swizzle None, 32, 64 or 128, but got {swizzle}")
        shape, strides = tuple(tensor.shape), tuple(tensor.stride())
        if len(box) != len(shape) or not 1 <= len(shape) <= 5:
            raise ArgumentError(
                f"expected a box of rank {len(shape)} (the tensor's, 1..5), but got {len(box)}")
        spec = _TensorMapSpec()
        spec.dataType = TENSOR_MAP_DTYPES[dtype]
        spec.rank = len(shape)
        spec.globalAddress = int(tensor.data_ptr())
        for d, (size, stride, box_size) in enumerate(zip(shape, strides, box)):
            spec.sizes[d], spec.strides[d], spec.boxSizes[d] = size, stride, box_size
            spec.elementStrides[d] = 1
        spec.swizzle = SWIZZLES[swizzle]
        # CUtensorMap is 128-byte aligned; ctypes cannot ask for that, so over-allocate.
        buffer = ctypes.create_string_buffer(256)
        aligned = (ctypes.addressof(buffer) + 127) // 128 * 128
        self._returned(self.cdll.fusionrtEncodeTensorMap(ctypes.byref(spec), aligned))
        return ctypes.string_at(aligned, 128)


# --------------------------------------------------------------------------
# Compiled libraries
# --------------------------------------------------------------------------

_torch_module: Any = None


def _torch() -> Any:
    """torch, imported on first use; None where it is not installed."""
    global _torch_module
    if _torch_module is None:
        try:
            import torch  # noqa: PLC0415 (lazy on purpose)
        except ImportError:
            _torch_module = False
        else:
            _torch_module = torch
    return _torch_module or None


SIGNATURE_PREFIX = "__fusion_signature_"


def _describe_specs(specs: Sequence[TensorSpec]) -> str:
    return "; ".join(str(s) for s in specs)


def _resolve_library_path(path: Union[str, "os.PathLike[str]"]) -> str:
    """An existing file's absolute path (a relative one against the working
    directory, which dlopen alone would not search); a bare name that is not
    a file here is left to the library search path."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return os.path.abspath(path)
    if os.path.exists(path):
        raise IsADirectoryError(errno.EISDIR, f"not a library file: {path}", path)
    if os.sep in path or (os.altsep and os.altsep in path):
        raise FileNotFoundError(
            errno.ENOENT, f"no such library: {path} (the working directory is {os.getcwd()})",
            path)
    return path


def library_signatures(path: str) -> Dict[str, str]:
    """The descriptions a compiled library (GPU or CPU) exports for its
    functions, function -> "arg0: bf16[?,512]; ...; result0: ...", read from
    the file without loading it (no driver needed); empty where the file is
    not such a library."""
    exports = _elf_exports(os.path.abspath(path)) or {}
    return {name[len(SIGNATURE_PREFIX):]: content.split(b"\0")[0].decode()
            for name, (_, content) in exports.items()
            if name.startswith(SIGNATURE_PREFIX) and content is not None}


def _elf_exports(path: str) -> Optional[Dict[str, Tuple[int, Optional[bytes]]]]:
    """The defined, exported symbols of an ELF64 shared library, read from the
    file (no dlopen, so no driver is needed): name -> (type, bytes), the bytes
    of each `__fusion_*` object. None when the file is not such a library."""
    import struct  # noqa: PLC0415
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] not in (1, 2):
        return None
    end = "<" if data[5] == 1 else ">"
    try:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        sections = [struct.unpack_from(end + "IIQQQQIIQQ", data, shoff + i * shentsize)
                    for i in range(shnum)]
        exports: Dict[str, Tuple[int, Optional[bytes]]] = {}
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 11 or not entsize:  # SHT_DYNSYM
                continue
            strings = sections[link]
            for i in range(1, size // entsize):
                name_at, info, other, shndx, value, length = struct.unpack_from(
                    end + "IBBHQQ", data, offset + i * entsize)
                binding, sym_type = info >> 4, info & 0xF
                if shndx == 0 or binding not in (1, 2) or (other & 3) in (1, 2):
                    continue  # undefined, local, internal or hidden
                start = strings[4] + name_at
                name = data[start:data.index(b"\0", start)].decode(errors="replace")
                content = None
                if name.startswith("__fusion_") and shndx < len(sections):
                    section = sections[shndx]
                    if section[1] != 8 and section[3] <= value < section[3] + section[5]:
                        at = section[4] + value - section[3]
                        content = data[at:at + length]
                exports[name] = (sym_type, content)
        return exports
    except (struct.error, IndexError, ValueError):
        return None


def _is_driver_missing(error: OSError) -> bool:
    return "libcuda" in str(error)


class Library:
    """A shared library produced by the fusion compiler.

    `path` is a file (a relative path is taken from the working directory)
    or a bare name on the library search path. Loading it runs its
    constructors, which load the device image through the runtime; a failure
    there raises FusionRuntimeError here. `runtime` is a Runtime, a path to
    libfusion_runtime.so, or None: then $FUSION_RUNTIME_LIBRARY, the library
    search path, or the library's own dependency on the runtime.

    The library's description of its functions (`functions()`,
    `signature(name)`) is read from the file itself, so that where the CUDA
    driver (libcuda.so.1) is missing, asking for a function that does not
    exist or has no description still says so; what needs the driver (a
    call, `cdll`, `runtime`) raises an OSError naming it."""

    def __init__(self, path: Union[str, "os.PathLike[str]"],
                 runtime: Union[Runtime, str, None] = None):
        self.path = _resolve_library_path(path)
        self._exports = _elf_exports(self.path) if os.path.isabs(self.path) else None
        self._cdll: Optional[ctypes.CDLL] = None
        self._runtime: Optional[Runtime] = runtime if isinstance(runtime, Runtime) else None
        self._load_error: Optional[OSError] = None
        try:
            self._load(None if isinstance(runtime, Runtime) else runtime)
        except OSError as error:
            if not _is_driver_missing(error):
                if os.sep not in self.path and str(error).startswith(self.path):
                    raise FileNotFoundError(
                        errno.ENOENT, f"no such library: {self.path} (neither in the working "
                        f"directory {os.getcwd()} nor on the library search path)",
                        self.path) from None
                raise
            self._load_error = OSError(
                f"{self.path}: cannot load the CUDA driver library libcuda.so.1, which the "
                f"fusion runtime needs to run anything (is an NVIDIA driver installed?): "
                f"{error}")

    def _load(self, runtime_path: Optional[str]) -> None:
        runtime_error = None
        if self._runtime is None:
            try:
                self._runtime = Runtime.find(runtime_path)
            except OSError as error:
                if not _is_driver_missing(error):
                    raise
                runtime_error = error  # but first: is the library there at all?
        if self._runtime is not None:
            # A failure left pending would make the constructors skip loading.
            self._runtime.check(f"before loading {self.path}")
        try:
            cdll = ctypes.CDLL(self.path, mode=ctypes.RTLD_GLOBAL)
        except OSError as error:
            # A dependency not found (the runtime, found through the one
            # loaded above where it loads) is the driver's absence.
            if runtime_error is not None and not str(error).startswith(f"{self.path}:"):
                raise runtime_error from None
            raise
        if runtime_error is not None:
            raise runtime_error
        self._cdll = cdll
        if self._runtime is None:
            if not hasattr(cdll, "fusionrtClearStatus"):
                self._cdll = None
                raise FileNotFoundError(
                    f"{self.path} does not link the fusion runtime and none was given: pass "
                    f"runtime='.../libfusion_runtime.so' or set {RUNTIME_LIBRARY_ENV}")
            self._runtime = Runtime(self._cdll)
        self._runtime.check(f"loading {self.path}")

    @property
    def cdll(self) -> ctypes.CDLL:
        """The loaded library (raises where it could not be loaded)."""
        if self._cdll is None:
            raise self._load_error or OSError(f"{self.path} is not loaded")
        return self._cdll

    @property
    def runtime(self) -> Runtime:
        if self._cdll is None:
            raise self._load_error or OSError(f"{self.path} is not loaded")
        return self._runtime

    @runtime.setter
    def runtime(self, value: Runtime) -> None:
        self._runtime = value

    def functions(self) -> Dict[str, Optional[str]]:
        """The library's exported functions and their descriptions (None for
        a function without one), as far as they can be read from the file:
        the described functions, then other exported functions."""
        if self._exports is None:
            return {}
        result: Dict[str, Optional[str]] = {}
        for name, (_, content) in sorted(self._exports.items()):
            if name.startswith(SIGNATURE_PREFIX) and content is not None:
                result[name[len(SIGNATURE_PREFIX):]] = content.split(b"\0")[0].decode()
        for name, (sym_type, _) in sorted(self._exports.items()):
            if sym_type == 2 and name not in result:  # STT_FUNC
                result[name] = None
        return result

    def _exported_list(self) -> str:
        names = list(self.functions())
        if not names:
            return "none found"
        shown = ", ".join(f"'{n}'" for n in names[:20])
        return shown + (f" and {len(names) - 20} more" if len(names) > 20 else "")

    def signature(self, name: str) -> Optional[str]:
        """The description the compiler exported for function `name` (the
        string `__fusion_signature_<name>`), or None."""
        if self._exports is not None:
            entry = self._exports.get(SIGNATURE_PREFIX + name)
            if entry is None or entry[1] is None:
                return None
            return entry[1].split(b"\0")[0].decode()
        try:
            symbol = ctypes.c_char.in_dll(self.cdll, SIGNATURE_PREFIX + name)
        except ValueError:
            return None
        return ctypes.string_at(ctypes.addressof(symbol)).decode()

    def function(self, name: str,
                 signature: Union[str, Sequence[TensorSpec], None] = None) -> "Function":
        """The compiled function `name`, checked against the library's
        description of it; a signature given here must agree with that
        description (it may name sizes the description leaves dynamic)."""
        if self._exports is not None:
            entry = self._exports.get(name)
            if entry is None or entry[0] != 2 or name.startswith("__fusion_"):
                raise AttributeError(
                    f"{self.path} exports no function '{name}'; its functions: "
                    f"{self._exported_list()}")
        described = self.signature(name)
        if signature is None:
            if described is None:
                raise ValueError(
                    f"{self.path} has no description of '{name}' (no "
                    f"'{SIGNATURE_PREFIX}{name}': not compiled by this fusion-compile); pass the "
                    f"signature, e.g. 'a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]'")
            return Function(self, name, parse_signature(described))
        specs = parse_signature(signature) if isinstance(signature, str) else list(signature)
        if described is None:
            return Function(self, name, specs)
        specs, static = merge_signatures(name, parse_signature(described), specs)
        return Function(self, name, specs, static)


def merge_signatures(function: str, described: Sequence[TensorSpec],
                     given: Sequence[TensorSpec]
                     ) -> Tuple[List[TensorSpec], List[Tuple[int, int, int]]]:
    """The signature a call is checked against when the caller gives one for
    a described function: the given one, which must have the description's
    arguments, dtypes and ranks and no static size other than the
    description's; a `?` or an integer there takes the description's size.
    A size the description names (sizes the function ties together) keeps
    its tie: where the given signature has a name there, that name, which
    must then be the same wherever the description has that name; where it
    has `?` or an integer, the description's name (renamed if the given
    signature uses it for another size).
    Returns it and the static sizes that must hold where the merged
    signature has a name (argument, dimension, size), checked separately.
    Raises ArgumentError quoting both."""
    def mismatch(why: str) -> ArgumentError:
        return ArgumentError(
            f"{function}: the signature given, '{_describe_specs(given)}', does not match the "
            f"library's description, '{_describe_specs(described)}': {why}")
    if len(given) != len(described):
        raise mismatch(f"expected {len(described)} arguments, but got {len(given)}")
    given_names = set()
    for index, (want, got) in enumerate(zip(described, given)):
        label = _label(index, got if got.name else want)
        if got.dtype != want.dtype:
            raise mismatch(f"{label}: expected dtype {want.dtype}, but got {got.dtype}")
        if got.rank != want.rank:
            raise mismatch(f"{label}: expected rank {want.rank}, but got {got.rank}")
        given_names.update(size for size in got.shape if isinstance(size, str))
    # The given name of each size the description names.
    renamed: Dict[str, str] = {}
    for index, (want, got) in enumerate(zip(described, given)):
        for dim, (size, given_size) in enumerate(zip(want.shape, got.shape)):
            if isinstance(size, str) and isinstance(given_size, str):
                seen = renamed.setdefault(size, given_size)
                if seen != given_size:
                    raise mismatch(
                        f"{_label(index, got if got.name else want)}: dimension {dim} is the "
                        f"description's size {size}, which the signature given names {seen} "
                        f"elsewhere: expected {seen}, but got {given_size}")
    for size in sorted({s for spec in described for s in spec.shape
                        if isinstance(s, str)} - set(renamed)):
        name = size
        while name in given_names:
            name += "_"
        renamed[size] = name
    merged, static = [], []
    for index, (want, got) in enumerate(zip(described, given)):
        label = _label(index, got if got.name else want)
        dims: List[Dim] = []
        for dim, (size, given_size) in enumerate(zip(want.shape, got.shape)):
            if isinstance(size, int):
                if isinstance(given_size, int) and given_size != size:
                    raise mismatch(f"{label}: expected size {size} in dimension {dim}, but got "
                                   f"{given_size}")
                if isinstance(given_size, str):
                    static.append((index, dim, size))
                    dims.append(given_size)
                else:
                    dims.append(size)
            elif isinstance(size, str):
                if isinstance(given_size, int):
                    static.append((index, dim, given_size))
                dims.append(renamed[size])
            else:
                dims.append(given_size)
        merged.append(TensorSpec(got.dtype, tuple(dims), got.name or want.name))
    return merged, static


class _Plan:
    """What a call with given dtypes, shapes and devices passes, checked once:
    the fusionrtInvoke packet with everything but the data pointers filled in."""

    __slots__ = ("packet", "offsets", "bound", "device", "on_torch")

    def __init__(self, packet, offsets, bound, device, on_torch):
        self.packet = packet      # array('q'): header + words, pointers to patch
        self.offsets = offsets    # per tensor, the packet index of its two pointers
        self.bound = bound        # the sizes bound to the signature's size names
        self.device = device      # the device ordinal
        self.on_torch = on_torch  # torch tensors: PyTorch's current stream by default


class Function:
    """A compiled host function; call it with tensors, outputs included.

    The first call with given dtypes, shapes and devices checks every tensor
    against the signature and keeps a plan of the call; later calls with the
    same ones (and contiguous, 16-byte aligned tensors of the same classes)
    only read the data pointers and the stream, and call the function through
    the runtime in one foreign call (fusionrtInvoke). Anything else takes the
    full check again, which raises what is wrong."""

    def __init__(self, library: Library, name: str, specs: Sequence[TensorSpec],
                 static_sizes: Sequence[Tuple[int, int, int]] = ()):
        self.library = library
        self.name = name
        self.specs = list(specs)
        # Sizes the library's description fixes where the signature names them.
        self._static_sizes = tuple(static_sizes)
        try:
            self._symbol = getattr(library.cdll, name)
        except AttributeError:
            raise AttributeError(f"{library.path} exports no function '{name}'") from None
        self._symbol.argtypes = [t for spec in self.specs for t in _memref_argtypes(spec)]
        self._symbol.restype = None
        self._address = ctypes.cast(self._symbol, ctypes.c_void_p).value
        self._word_count = sum(3 + 2 * spec.rank for spec in self.specs)
        runtime = library.runtime
        self._invoke = (runtime.invoke if runtime is not None and
                        self._word_count <= INVOKE_MAX_WORDS else None)
        self._plans: Dict[Tuple[Any, ...], _Plan] = {}
        self._fast_classes: set = set()
        self._raw_stream = None

    def __call__(self, *tensors: Any, stream: Any = None,
                 synchronize: bool = False) -> Dict[str, int]:
        """Checks the tensors, calls the function, raises on a runtime failure.
        Returns the sizes bound to the signature's size names.

        The call runs on `stream` (a torch.cuda.Stream or a raw CUstream
        handle) or, for torch tensors by default, on PyTorch's current stream
        of their device: it enqueues its work there and returns at once,
        ordered with everything else on that stream like a PyTorch op, with
        no host synchronization (and can be captured in a CUDA graph after a
        first call). A failure of the enqueued kernels surfaces at the
        stream's next synchronization, or here with `synchronize=True`, which
        waits for the stream and checks. Without torch tensors and without a
        stream, the function runs on a stream of its own and returns when its
        work is done."""
        plan = None
        if self._plans:
            # The fast path: a call like an earlier one. Only what can change
            # without changing the plan's key is looked at again.
            fast = self._fast_classes
            key = []
            pointers = []
            for tensor in tensors:
                if tensor.__class__ not in fast or not tensor.is_contiguous():
                    break
                pointer = tensor.data_ptr()
                if pointer & (ALIGNMENT_BYTES - 1):
                    break
                pointers.append(pointer)
                key.append((tensor.dtype, tensor.shape, tensor.get_device()))
            else:
                plan = self._plans.get(tuple(key))
            if plan is not None:
                packet = plan.packet[:]
                for offset, pointer in zip(plan.offsets, pointers):
                    packet[offset] = pointer
                    packet[offset + 1] = pointer
                return self._invoke_packet(packet, plan, stream, synchronize)
        bound, words = _checked_words(self.specs, tensors, self.name)
        for index, dim, size in self._static_sizes:
            got = int(tensors[index].shape[dim])
            if got != size:
                raise ArgumentError(
                    f"{self.name}: {_label(index, self.specs[index])}: expected size {size} in "
                    f"dimension {dim} (the function's signature), but got {got}")
        device = tensors[0].device if tensors else None
        index = getattr(device, "index", None)
        torch = _torch()
        on_torch = bool(torch is not None and tensors and isinstance(tensors[0], torch.Tensor)
                        and tensors[0].is_cuda)
        if index is None and on_torch:
            index = torch.cuda.current_device()
        index = index or 0
        if self._invoke is None:
            return self._call_directly(words, bound, index, on_torch, tensors, stream,
                                       synchronize)
        plan = self._plan(tensors, words, bound, index, on_torch)
        return self._invoke_packet(plan.packet[:], plan, stream, synchronize)

    def _plan(self, tensors: Sequence[Any], words: List[int], bound: Dict[str, int],
              index: int, on_torch: bool) -> _Plan:
        """The plan of a checked call; kept for the fast path where its
        tensors allow it (methods is_contiguous and get_device, no size 0,
        which contiguity alone would not check)."""
        packet = array.array("q", [self._address, len(words), index, 0, 0])
        packet.extend(words)
        offsets, offset = [], INVOKE_HEADER_WORDS
        for spec in self.specs:
            offsets.append(offset)
            offset += 3 + 2 * spec.rank
        plan = _Plan(packet, tuple(offsets), bound, index, on_torch)
        try:
            keep = all(callable(getattr(t, "is_contiguous", None)) and
                       callable(getattr(t, "get_device", None)) and
                       t.get_device() == index and 0 not in tuple(t.shape) for t in tensors)
            key = tuple((t.dtype, t.shape, t.get_device()) for t in tensors) if keep else None
            if key is not None:
                hash(key)
        except (TypeError, ValueError, RuntimeError, AttributeError):
            key = None
        if key is not None:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
            self._fast_classes.update(t.__class__ for t in tensors)
        return plan

    def _stream_of(self, plan: _Plan, stream: Any) -> Optional[int]:
        """The raw stream handle a call runs on, or None for a stream of its own."""
        if stream is not None:
            return int(getattr(stream, "cuda_stream", stream))
        if not plan.on_torch:
            return None
        raw = self._raw_stream
        if raw is None:
            torch = _torch()
            # PyTorch's current stream as a raw handle, without building a
            # torch.cuda.Stream (what torch.cuda.current_stream does).
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
                lambda index: torch.cuda.current_stream(index).cuda_stream)
            self._raw_stream = raw
        return raw(plan.device)

    def _invoke_packet(self, packet: "array.array", plan: _Plan, stream: Any,
                       synchronize: bool) -> Dict[str, int]:
        handle = self._stream_of(plan, stream)
        if handle is not None:
            packet[3] = INVOKE_CALL_STREAM | (INVOKE_SYNCHRONIZE if synchronize else 0)
            packet[4] = handle
        status = self._invoke(packet.buffer_info()[0])
        if status:
            self._raise(status)
        return dict(plan.bound)

    def _raise(self, status: int) -> None:
        message = self.library.runtime.last_error()
        if status & INVOKE_NOT_CALLED:
            raise FusionRuntimeError(status & ~INVOKE_NOT_CALLED,
                                     f"before calling {self.name}: {message}")
        raise FusionRuntimeError(status, f"{self.name}: {message}")

    def _call_directly(self, words: List[int], bound: Dict[str, int], index: int,
                       on_torch: bool, tensors: Sequence[Any], stream: Any,
                       synchronize: bool) -> Dict[str, int]:
        """The call without fusionrtInvoke (a runtime without it, or more
        words than it takes): one ctypes call per runtime step."""
        runtime = self.library.runtime
        runtime.check(f"before calling {self.name}")
        runtime.set_device(index)
        handle = None
        if stream is not None:
            handle = int(getattr(stream, "cuda_stream", stream))
        elif on_torch:
            handle = _torch().cuda.current_stream(tensors[0].device).cuda_stream
        if handle is None:
            self._symbol(*words)
        else:
            runtime._returned(runtime.cdll.fusionrtSetCallStream(handle))
            try:
                self._symbol(*words)
            finally:
                runtime.cdll.fusionrtClearCallStream()
            if synchronize:
                runtime.cdll.mgpuStreamSynchronize(handle)
        runtime.check(self.name)
        return bound

    def __repr__(self) -> str:
        return f"<fusion function {self.name}({'; '.join(str(s) for s in self.specs)})>"
