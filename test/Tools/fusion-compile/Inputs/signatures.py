"""Prints each function a compiled library describes, and its description,
read from the file (fusion_runtime.library_signatures: no GPU, no driver).

    signatures.py LIBRARY
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "..", "runtime", "python"))
import fusion_runtime as fr  # noqa: E402

for name, description in sorted(fr.library_signatures(sys.argv[1]).items()):
    print(f"{name}: {description}")
