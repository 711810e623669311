"""Runs a jagged training-step program (kunlun_train_jagged_h2,
train_jagged_d64_kv40) once on random inputs, every output poisoned, and
says how many NaN are left (exit 1 if any): the compute-sanitizer runner for
the jagged training step (run_one_attention.py takes the dense ones).
Arguments: the program, the sequence lengths comma-separated, the tokens
past offsets[B].

    FUSION_GPU_ARTIFACTS=build/gpu compute-sanitizer --tool racecheck \\
        python3 test/gpu/run_one_jagged_train.py train_jagged_d64_kv40 200,33,0,57,1 11
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_programs as ap  # noqa: E402


def main():
    name, lengths, extra = sys.argv[1], [int(n) for n in sys.argv[2].split(",")], int(sys.argv[3])
    prog = ap.programs()[name]
    fn = ap.function(prog)
    h, d, kv = prog["heads"], prog["d"], prog["kv"]
    offsets, bounds = ap.jagged_offsets(prog, lengths)
    batch, tokens = len(lengths), bounds[-1] + extra

    def randn(*shape, scale=1.0, shift=0.0):
        return (shift + scale * torch.randn(*shape, device="cuda")).bfloat16()
    q, k, v = randn(tokens, h, d), randn(batch, kv, h, d, scale=d ** -0.5), randn(batch, kv, h, d)
    params = [randn(h * d, scale=0.1, shift=1.0), randn(h * d, scale=0.1),
              randn(h * d, scale=0.1, shift=1.0)]
    dout = randn(tokens, h, d)
    kvs = torch.full((batch, kv, h, d), float("nan"), dtype=q.dtype, device="cuda")
    outs = [torch.full_like(q, float("nan")), torch.full_like(q, float("nan")), kvs, kvs.clone()]
    outs += [torch.full((h * d,), float("nan"), device="cuda") for _ in range(3)]
    fn(q, k, v, offsets, *params, dout, *outs)
    torch.cuda.synchronize()
    bad = sum(int(torch.isnan(t).sum()) for t in outs)
    print(f"{name} B={batch} T={tokens}: {'ok' if bad == 0 else f'{bad} NaN left'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
