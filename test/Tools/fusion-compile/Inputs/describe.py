"""Prints what the Python loader reads of a compiled library without a GPU:
each function and its description, then the loader's errors for a missing
function and for a hand-written signature that contradicts the description,
and the check of a call whose tensors disagree on a size the description
names (stand-in tensors: no torch, no GPU).

    describe.py LIBRARY FUSION_COMPILE   (the runtime is FUSION_COMPILE/../../lib)
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "..", "runtime", "python"))
import fusion_runtime as fr  # noqa: E402

library_path, tool = sys.argv[1], sys.argv[2]
runtime = os.path.join(os.path.dirname(os.path.abspath(tool)), "..", "lib", "libfusion_runtime.so")
library = fr.Library(library_path, runtime=runtime)
for name, description in library.functions().items():
    print(f"{name}: {description}")
for call in (lambda: library.function("nope"),
             lambda: library.function("rows", "x: bf16[M,512]; y: bf16[M,512]")):
    try:
        call()
    except (AttributeError, fr.ArgumentError) as error:
        print(f"{type(error).__name__}: {error}".replace(library.path, "LIB"))


class Device:
    type, index = "cuda", 0


DEVICE = Device()


class Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class Tensor:
    """As much of a torch.Tensor as the loader's checks read."""

    def __init__(self, *shape):
        self.shape, self.dtype, self.device = shape, Dtype("bfloat16"), DEVICE

    def stride(self):
        return fr._row_major_strides(self.shape)

    def data_ptr(self):
        return 0x7F0000000000

    def storage_offset(self):
        return 0


specs = fr.parse_signature(library.signature("rows"))
print("rows bound:", fr.check_arguments(specs, [Tensor(8, 1024), Tensor(1024), Tensor(8, 1024)], "rows"))
try:
    fr.check_arguments(specs, [Tensor(8, 1024), Tensor(1024), Tensor(4, 1024)], "rows")
except fr.ArgumentError as error:
    print(f"ArgumentError: {error}")
