"""Calls the CPU library fusion-compile --cpu built from cpu.mlir with
ctypes and plain Python lists (no torch, no numpy), on pseudo-random inputs,
and compares each result with the formula computed here in float64.

    python3 run_cpu.py LIB.so
Prints one line per function: its description and the largest difference."""
import array
import ctypes
import math
import random
import sys


def memref(values, shape):
    """(keep-alive buffer, expanded memref descriptor words) of a row-major f32 tensor."""
    buf = array.array("f", values)
    pointer = buf.buffer_info()[0]
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return buf, [pointer, pointer, 0, *shape, *strides]


def call(lib, name, tensors):
    words, keep = [], []
    for values, shape in tensors:
        buf, w = memref(values, shape)
        keep.append(buf)
        words += w
    f = getattr(lib, name)
    f.restype = None
    f.argtypes = [ctypes.c_int64] * len(words)
    f(*words)
    return keep


def main():
    lib = ctypes.CDLL(sys.argv[1])
    rng = random.Random(7)
    m, h, n = 5, 16, 24  # M is dynamic in the library: any token count
    x = [rng.uniform(-2, 2) for _ in range(m * h)]
    g = [rng.uniform(0.5, 1.5) for _ in range(h)]
    w = [rng.uniform(-1, 1) for _ in range(n * h)]  # nn.Linear's [out, in]
    b = [rng.uniform(-1, 1) for _ in range(n)]
    nan = float("nan")
    keep = call(lib, "prenorm", [(x, (m, h)), (g, (h,)), (w, (n, h)), (b, (n,)),
                                 ([nan] * (m * n), (m, n)), ([nan] * m, (m,))])
    y, rstd = keep[4], keep[5]
    worst = 0.0
    for i in range(m):
        row = x[i * h:(i + 1) * h]
        r = 1.0 / math.sqrt(sum(v * v for v in row) / h + 1e-5)
        worst = max(worst, abs(rstd[i] - r) / r)
        normed = [row[k] * r * g[k] for k in range(h)]
        for j in range(n):
            ref = sum(normed[k] * w[j * h + k] for k in range(h)) + b[j]
            worst = max(worst, abs(y[i * n + j] - ref) / (1 + abs(ref)))
    print(f"prenorm: "
          f"M={m} max relative error {'ok' if worst < 1e-5 else worst}")


main()
