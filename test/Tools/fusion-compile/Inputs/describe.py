"""Prints what the Python loader reads of a compiled library without a GPU:
each function and its description, then the loader's errors for a missing
function and for a hand-written signature that contradicts the description.

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
