"""Prints one line per kernel of the PTX that `fusion-opt
--fusion-to-gpu=format=isa` embeds in its gpu.binary ops (the
`assembly = "..."` strings, MLIR-escaped):

    <kernel> <sha256 of the kernel's PTX, from its `// .globl` line to the next>

plus one `<module header> <sha256>` line per binary for the text before the
first kernel (PTX version, target, address size, extern declarations).
Sorted by kernel name, so that a change in emission order alone does not
show. A golden file of these lines proves that a refactor of the generator
changes no kernel (test/Conversion/FusionToGPU/ptx-golden-sm90a.test).

    python3 ptx_digest.py < lowered.mlir
"""
import hashlib
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from ptxas_check import unescape  # noqa: E402


def digest(text):
    lines = []
    blobs = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
    for n, blob in enumerate(blobs):
        ptx = unescape(blob)
        parts = re.split(r"(?m)^(?=[ \t]*// \.globl\s)", ptx)
        lines.append(f"<header {n}> {hashlib.sha256(parts[0].encode()).hexdigest()}")
        for part in parts[1:]:
            name = part.split()[2]
            lines.append(f"{name} {hashlib.sha256(part.encode()).hexdigest()}")
    return sorted(lines)


def main():
    lines = digest(sys.stdin.read())
    if not lines:
        print("no PTX found")
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
