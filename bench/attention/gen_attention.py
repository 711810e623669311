#!/usr/bin/env python3
"""Writes the standalone attention programs (fusion.gdpa, issue 17) that the
H200 tests and benchmarks call: one .mlir per program in OUT/attention and
the manifest attention.json (name, shapes, activation, scale, signature).
Batch and query length are dynamic (`?`): one library serves every B and
L_q; heads, head dimensions and the key/value length are static, as the
kernel holds keys and values whole in shared memory.

    python3 bench/attention/gen_attention.py OUT
"""
import json
import os
import sys

# name: (heads, D, Dv, L_kv, activation, scale, dtype)
PROGRAMS = {
    # The seed's Kunlun PFFN attention: H = 2 (and 4 for L_q = 1024), D = 128,
    # L_kv = 128, gelu_tanh, scale 1.
    "gdpa_kunlun_h2": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16"),
    "gdpa_kunlun_h4": (4, 128, 128, 128, "gelu_tanh", 1.0, "bf16"),
    # Every activation; odd key lengths (padded to 64 by the TMA); D != Dv.
    "gdpa_silu_d64": (4, 64, 128, 100, "silu", 0.125, "bf16"),
    "gdpa_relu_kv256": (1, 128, 64, 256, "relu", 0.0625, "bf16"),
    "gdpa_gelu_kv1": (3, 192, 64, 1, "gelu", 0.5, "bf16"),
    "gdpa_identity_dv256": (2, 64, 256, 64, "identity", 0.03125, "bf16"),
    "gdpa_gelu_tanh_f16": (2, 128, 128, 72, "gelu_tanh", 0.125, "f16"),
}


def program(name, heads, d, dv, kv, act, scale, dtype):
    q = f"tensor<?x?x{heads}x{d}x{dtype}>"
    k = f"tensor<?x{kv}x{heads}x{d}x{dtype}>"
    v = f"tensor<?x{kv}x{heads}x{dv}x{dtype}>"
    o = f"tensor<?x?x{heads}x{dv}x{dtype}>"
    return f"""// {name}: out = {act}({scale} q k^T) v per batch and head (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%q: {q}, %k: {k}, %v: {v}) -> {o} {{
  %o = fusion.gdpa %q, %k, %v {{activation = #fusion.activation<{act}>, scale = {scale!r} : f32}}
      : {q}, {k}, {v} -> {o}
  return %o : {o}
}}
}}
"""


def main():
    out = os.path.join(sys.argv[1], "attention")
    os.makedirs(out, exist_ok=True)
    manifest = []
    for name, (heads, d, dv, kv, act, scale, dtype) in PROGRAMS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(program(name, heads, d, dv, kv, act, scale, dtype))
        manifest.append({
            "name": name, "heads": heads, "d": d, "dv": dv, "kv": kv,
            "activation": act, "scale": scale, "dtype": dtype,
            "signature": (f"q: {dtype}[B,L,{heads},{d}]; k: {dtype}[B,{kv},{heads},{d}]; "
                          f"v: {dtype}[B,{kv},{heads},{dv}]; out: {dtype}[B,L,{heads},{dv}]"),
        })
    with open(os.path.join(out, "attention.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"gen_attention: {len(manifest)} programs in {out}")


if __name__ == "__main__":
    main()
