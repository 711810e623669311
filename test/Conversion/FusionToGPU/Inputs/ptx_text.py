"""Prints the PTX that `fusion-opt --fusion-to-gpu=format=isa` embeds in its
gpu.binary ops (the `assembly = "..."` strings, MLIR-escaped) as plain text,
module after module, for FileCheck tests of the PTX itself.

    python3 ptx_text.py < lowered.mlir
"""
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from ptxas_check import unescape  # noqa: E402

for blob in re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', sys.stdin.read()):
    print(unescape(blob))
