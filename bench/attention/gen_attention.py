#!/usr/bin/env python3
"""Writes the standalone attention programs (fusion.gdpa, issue 17, and its
backward fusion.gdpa_grad; the Kunlun block, dense and jagged, its training
step and its backward) that the
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
    # Two stages since the groups' output buffers take Dv, not L_kv, columns.
    "gdpa_gelu_tanh_kv150": (2, 128, 64, 150, "gelu_tanh", 0.125, "bf16"),
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


# Jagged q (HSTU's layout: the tokens of all sequences concatenated, batch b
# owning offsets[b] .. offsets[b + 1]), keys and values dense per batch:
# name: (heads, D, Dv, L_kv, activation, scale, dtype, offsets dtype).
JAGGED = {
    "gdpa_jagged_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", "i32"),
    "gdpa_jagged_silu_i64": (4, 64, 128, 100, "silu", 0.125, "bf16", "i64"),
}


def jagged_program(name, heads, d, dv, kv, act, scale, dtype, odt):
    q = f"tensor<?x{heads}x{d}x{dtype}>"
    k = f"tensor<?x{kv}x{heads}x{d}x{dtype}>"
    v = f"tensor<?x{kv}x{heads}x{dv}x{dtype}>"
    o = f"tensor<?x{heads}x{dv}x{dtype}>"
    off = f"tensor<?x{odt}>"
    return f"""// {name}: out = {act}({scale} q k^T) v per sequence and head, q jagged by offsets (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%q: {q}, %k: {k}, %v: {v}, %offsets: {off}) -> {o} {{
  %o = fusion.gdpa %q, %k, %v offsets(%offsets : {off}) {{activation = #fusion.activation<{act}>, scale = {scale!r} : f32}}
      : {q}, {k}, {v} -> {o}
  return %o : {o}
}}
}}
"""


# gdpa with a residual added to its output (fusion.gdpa residual(...), what
# fusion-plan-kernels makes of the block's gdpa + ln_q): name: (heads, D,
# Dv, L_kv, activation, scale, dtype, offsets dtype or None, residual). The
# residual is "q" (the query itself: the sm_90a kernel reads it from the
# stage's Q tile where Dv <= 128; D = Dv) or "own" (an operand of its own,
# read from global memory).
RESIDUALS = {
    "gdpa_residual_q_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", None, "q"),
    "gdpa_residual_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", None, "own"),
    "gdpa_residual_q_d64": (4, 64, 64, 100, "silu", 0.125, "bf16", None, "q"),
    "gdpa_residual_d64": (4, 64, 128, 100, "silu", 0.125, "bf16", None, "own"),
    "gdpa_residual_dv256": (2, 64, 256, 64, "identity", 0.03125, "bf16", None, "own"),
    "gdpa_residual_q_d256": (1, 256, 256, 64, "gelu", 0.0625, "f16", None, "q"),
    "gdpa_jagged_residual_q_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", "i32", "q"),
    "gdpa_jagged_residual_d64": (4, 64, 64, 100, "silu", 0.125, "bf16", "i64", "own"),
    "gdpa_jagged_residual_dv256": (2, 64, 256, 64, "relu", 0.125, "bf16", "i32", "own"),
}


def residual_program(name, heads, d, dv, kv, act, scale, dtype, odt, residual):
    lead = "" if odt else "?x"
    q = f"tensor<?x{lead}{heads}x{d}x{dtype}>"
    k = f"tensor<?x{kv}x{heads}x{d}x{dtype}>"
    v = f"tensor<?x{kv}x{heads}x{dv}x{dtype}>"
    o = f"tensor<?x{lead}{heads}x{dv}x{dtype}>"
    args = f"%q: {q}, %k: {k}, %v: {v}"
    opts = ""
    if odt:
        args += f", %offsets: tensor<?x{odt}>"
        opts += f" offsets(%offsets : tensor<?x{odt}>)"
    if residual == "own":
        args += f", %r: {o}"
    opts += f" residual(%q : {q})" if residual == "q" else f" residual(%r : {o})"
    return f"""// {name}: out = {act}({scale} q k^T) v + {'q' if residual == 'q' else 'r'}{', q jagged by offsets' if odt else ''} (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}({args}) -> {o} {{
  %o = fusion.gdpa %q, %k, %v{opts} {{activation = #fusion.activation<{act}>, scale = {scale!r} : f32}}
      : {q}, {k}, {v} -> {o}
  return %o : {o}
}}
}}
"""


# The backward, fusion.gdpa_grad (dq, dk, dv of the same gdpa): name:
# (heads, D, Dv, L_kv, activation, scale, dtype). The kernel takes D, Dv of
# 64 to 256 and L_kv up to 256 (past 128 in two passes of 128 keys; with D
# or Dv past 128, passes of 64 keys and two column passes each).
GRADS = {
    "gdpa_grad_kunlun_h2": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16"),
    "gdpa_grad_kunlun_h4": (4, 128, 128, 128, "gelu_tanh", 1.0, "bf16"),
    "gdpa_grad_silu_d64": (4, 64, 128, 100, "silu", 0.125, "bf16"),
    "gdpa_grad_relu_kv64": (1, 128, 64, 64, "relu", 0.0625, "bf16"),
    "gdpa_grad_gelu_kv1": (3, 64, 64, 1, "gelu", 0.5, "bf16"),
    "gdpa_grad_identity_d64": (2, 64, 64, 128, "identity", 0.125, "bf16"),
    "gdpa_grad_gelu_tanh_f16": (2, 128, 128, 72, "gelu_tanh", 0.125, "f16"),
    "gdpa_grad_kv256_h2": (2, 128, 128, 256, "gelu_tanh", 1.0, "bf16"),
    "gdpa_grad_kv150_silu": (2, 128, 64, 150, "silu", 0.125, "bf16"),
    "gdpa_grad_kv200_d64_f16": (3, 64, 128, 200, "gelu", 0.25, "f16"),
    "gdpa_grad_kv129_d64": (1, 64, 64, 129, "identity", 0.125, "bf16"),
    # Heads past 128 columns (column passes).
    "gdpa_grad_d256": (2, 256, 256, 128, "gelu_tanh", 0.0625, "bf16"),
    "gdpa_grad_d192_kv100": (2, 192, 192, 100, "silu", 0.1, "bf16"),
    "gdpa_grad_d64_dv256_kv200_f16": (2, 64, 256, 200, "relu", 0.125, "f16"),
    "gdpa_grad_d256_dv64": (1, 256, 64, 64, "gelu", 0.0625, "bf16"),
}


def grad_program(name, heads, d, dv, kv, act, scale, dtype):
    q = f"tensor<?x?x{heads}x{d}x{dtype}>"
    k = f"tensor<?x{kv}x{heads}x{d}x{dtype}>"
    v = f"tensor<?x{kv}x{heads}x{dv}x{dtype}>"
    o = f"tensor<?x?x{heads}x{dv}x{dtype}>"
    return f"""// {name}: dq, dk, dv of out = {act}({scale} q k^T) v given d out (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%do: {o}, %q: {q}, %k: {k}, %v: {v}) -> ({q}, {k}, {v}) {{
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v {{activation = #fusion.activation<{act}>, scale = {scale!r} : f32}}
      : {o}, {q}, {k}, {v} -> {q}, {k}, {v}
  return %dq, %dk, %dv : {q}, {k}, {v}
}}
}}
"""


# The jagged backward (q, do, dq [T, H, D] by offsets): name: (heads, D, Dv,
# L_kv, activation, scale, dtype, offsets dtype).
JAGGED_GRADS = {
    "gdpa_grad_jagged_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", "i32"),
    "gdpa_grad_jagged_silu_i64": (4, 64, 128, 100, "silu", 0.125, "bf16", "i64"),
    "gdpa_grad_jagged_kv192": (2, 128, 128, 192, "gelu_tanh", 0.5, "bf16", "i32"),
    "gdpa_grad_jagged_d256": (2, 256, 256, 160, "gelu_tanh", 0.0625, "bf16", "i32"),
}


def jagged_grad_program(name, heads, d, dv, kv, act, scale, dtype, odt):
    q = f"tensor<?x{heads}x{d}x{dtype}>"
    k = f"tensor<?x{kv}x{heads}x{d}x{dtype}>"
    v = f"tensor<?x{kv}x{heads}x{dv}x{dtype}>"
    o = f"tensor<?x{heads}x{dv}x{dtype}>"
    off = f"tensor<?x{odt}>"
    return f"""// {name}: dq, dk, dv of out = {act}({scale} q k^T) v per sequence and head, q jagged by offsets (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%do: {o}, %q: {q}, %k: {k}, %v: {v}, %offsets: {off}) -> ({q}, {k}, {v}) {{
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v offsets(%offsets : {off}) {{activation = #fusion.activation<{act}>, scale = {scale!r} : f32}}
      : {o}, {q}, {k}, {v} -> {q}, {k}, {v}
  return %dq, %dk, %dv : {q}, {k}, {v}
}}
}}
"""


# The backward with a residual added to dq (fusion.gdpa_grad residual(...),
# what fusion-plan-kernels makes of the Kunlun block's dh + dq): name:
# (heads, D, Dv, L_kv, activation, scale, dtype, offsets dtype or None,
# residual). The residual is "do" (the grad operand itself: the sm_90a
# kernel reads it from the stage's dO tile; D = Dv) or "own" (an operand of
# its own, read from global memory).
RESIDUAL_GRADS = {
    "gdpa_grad_residual_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", None, "own"),
    "gdpa_grad_residual_do_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", None, "do"),
    "gdpa_grad_residual_d64": (4, 64, 64, 100, "silu", 0.125, "bf16", None, "own"),
    "gdpa_grad_residual_do_d64": (2, 64, 64, 128, "identity", 0.125, "bf16", None, "do"),
    "gdpa_grad_jagged_residual_kunlun": (2, 128, 128, 128, "gelu_tanh", 1.0, "bf16", "i32", "own"),
    "gdpa_grad_jagged_residual_do_d64": (4, 64, 64, 100, "silu", 0.125, "bf16", "i64", "do"),
    "gdpa_grad_residual_kv256": (2, 128, 128, 256, "gelu_tanh", 1.0, "bf16", None, "own"),
    "gdpa_grad_residual_do_kv200": (2, 128, 128, 200, "gelu_tanh", 0.5, "bf16", None, "do"),
    "gdpa_grad_jagged_residual_kv160_d64": (4, 64, 64, 160, "silu", 0.125, "bf16", "i64", "own"),
    "gdpa_grad_residual_do_d256": (2, 256, 256, 128, "gelu_tanh", 0.0625, "bf16", None, "do"),
    # Heads of 256 with a residual of its own: the column-pass kernel (the
    # role groups have no room to stage the residual's blocks).
    "gdpa_grad_residual_d256": (2, 256, 256, 128, "gelu_tanh", 0.0625, "bf16", None, "own"),
    "gdpa_grad_jagged_residual_d192": (2, 192, 192, 256, "gelu", 0.1, "bf16", "i64", "own"),
}


def residual_grad_program(name, heads, d, dv, kv, act, scale, dtype, odt, residual):
    lead = "" if odt else "?x"
    q = f"tensor<?x{lead}{heads}x{d}x{dtype}>"
    k = f"tensor<?x{kv}x{heads}x{d}x{dtype}>"
    v = f"tensor<?x{kv}x{heads}x{dv}x{dtype}>"
    o = f"tensor<?x{lead}{heads}x{dv}x{dtype}>"
    args = f"%do: {o}, %q: {q}, %k: {k}, %v: {v}"
    opts = ""
    if odt:
        args += f", %offsets: tensor<?x{odt}>"
        opts += f" offsets(%offsets : tensor<?x{odt}>)"
    if residual == "own":
        args += f", %r: {q}"
    opts += f" residual({'%do' if residual == 'do' else '%r'} : {q})"
    return f"""// {name}: dq (+ the residual {'do' if residual == 'do' else 'r'}), dk, dv of out = {act}({scale} q k^T) v given d out{', q jagged by offsets' if odt else ''} (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}({args}) -> ({q}, {k}, {v}) {{
  %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v{opts} {{activation = #fusion.activation<{act}>, scale = {scale!r} : f32}}
      : {o}, {q}, {k}, {v} -> {q}, {k}, {v}
  return %dq, %dk, %dv : {q}, {k}, {v}
}}
}}
"""


# gdpa_grad with the RMSNorm-gradient prologue (the block's rms_norm_grad
# folded in by fusion-plan-kernels): name: (heads, D = Dv, L_kv, activation,
# scale, rms weight, grad_residual).
PROLOGUE_GRADS = {
    "gdpa_grad_rms_kunlun_h2": (2, 128, 128, "gelu_tanh", 1.0, True, True),
    "gdpa_grad_rms_kunlun_h4": (4, 128, 128, "gelu_tanh", 1.0, True, True),
    "gdpa_grad_rms_d64_h3": (3, 64, 100, "silu", 0.125, True, False),
    "gdpa_grad_rms_one_head": (1, 64, 40, "identity", 0.125, False, True),
    "gdpa_grad_rms_one_head_kv100": (1, 64, 100, "identity", 0.125, False, True),
    "gdpa_grad_rms_one_group_h2": (2, 64, 40, "identity", 0.125, True, True),
}


def prologue_grad_program(name, heads, d, kv, act, scale, weight, grad_residual):
    q = f"tensor<?x?x{heads}x{d}xbf16>"
    k = f"tensor<?x{kv}x{heads}x{d}xbf16>"
    hd = heads * d
    args = f"%dout: {q}, %q: {q}, %k: {k}, %v: {k}, %x: {q}, %rstd: tensor<?x?xf32>"
    opts = f" rms_norm_grad(%x, %rstd : {q}, tensor<?x?xf32>)"
    results, names = [q, k, k], ["%dq", "%dk", "%dv"]
    if weight:
        args += f", %w: tensor<{hd}xbf16>"
        opts += f" rms_weight(%w : tensor<{hd}xbf16>)"
        results.append(f"tensor<{hd}xf32>")
        names.append("%dw")
    attrs = f"activation = #fusion.activation<{act}>, scale = {scale!r} : f32"
    if grad_residual:
        attrs += ", grad_residual"
    res = ", ".join(results)
    return f"""// {name}: gdpa_grad of do = rms_norm_grad(d out, x, rstd{', w' if weight else ''}) over the H x D of a token{' (+ do added to dq)' if grad_residual else ''} (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}({args}) -> ({res}) {{
  {", ".join(names)} = fusion.gdpa_grad %dout, %q, %k, %v{opts} {{{attrs}}}
      : {q}, {q}, {k}, {k} -> {res}
  return {", ".join(names)} : {res}
}}
}}
"""


# The Kunlun PFFN attention block, written with unfused ops as in
# test/Pipelines/attention-block-sm90a.mlir: name: (heads, D, L_kv).
BLOCKS = {"block_kunlun_h2": (2, 128, 128), "block_kunlun_h4": (4, 128, 128),
          "block_d64_h3_kv40": (3, 64, 40), "block_one_head": (1, 128, 64)}
BLOCK_EPS = 1e-5


def block_program(name, heads, d, kv):
    hd = heads * d
    q = f"tensor<?x?x{heads}x{d}xbf16>"
    flat = f"tensor<?x?x{hd}xbf16>"
    kvt = f"tensor<?x{kv}x{heads}x{d}xbf16>"
    w = f"tensor<{hd}xbf16>"
    stats = "tensor<?x?xf32>"
    return f"""// {name}: LayerNorm(q) -> gdpa(gelu_tanh) -> + ln_q -> RMSNorm -> + q, both norms over H x D (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%q: {q}, %k: {kvt}, %v: {kvt}, %lnw: {w}, %lnb: {w}, %rmsw: {w}) -> {q} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : {q}
  %l = tensor.dim %q, %c1 : {q}
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : {q} into {flat}
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : {w}) bias(%lnb : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {stats}, {stats}
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [%b, %l, {heads}, {d}] : {flat} into {q}
  %a = fusion.gdpa %ln, %k, %v {{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}} : {q}, {kvt}, {kvt} -> {q}
  %h = fusion.add %a, %ln : {q}
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : {q} into {flat}
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {stats}
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [%b, %l, {heads}, {d}] : {flat} into {q}
  %out = fusion.add %y, %q : {q}
  return %out : {q}
}}
}}
"""


# The block with jagged q (HSTU's layout: q and out [T, H, D], sequence b
# owning tokens offsets[b] .. offsets[b + 1], k and v [B, L_kv, H, D]; the
# norms over the [T, H * D] rows), as users write it: name: (heads, D, L_kv,
# offsets type). fusion-fuse forms one fusion.norm_attention (jagged); the
# tokens past offsets[B] get out = rms_norm(ln_q) + q (no attention term).
JAGGED_BLOCKS = {
    "block_jagged_kunlun_h2": (2, 128, 128, "i32"),
    "block_jagged_kunlun_h4_i64": (4, 128, 128, "i64"),
    "block_jagged_d64_kv40": (3, 64, 40, "i32"),
}


def jagged_block_program(name, heads, d, kv, odt):
    hd = heads * d
    q = f"tensor<?x{heads}x{d}xbf16>"
    flat = f"tensor<?x{hd}xbf16>"
    kvt = f"tensor<?x{kv}x{heads}x{d}xbf16>"
    w = f"tensor<{hd}xbf16>"
    off = f"tensor<?x{odt}>"
    stats = "tensor<?xf32>"
    return f"""// {name}: LayerNorm(q) -> gdpa(gelu_tanh) -> + ln_q -> RMSNorm -> + q, q jagged by offsets, both norms over H x D (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%q: {q}, %k: {kvt}, %v: {kvt}, %offsets: {off}, %lnw: {w}, %lnb: {w}, %rmsw: {w}) -> {q} {{
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : {q}
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : {q} into {flat}
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : {w}) bias(%lnb : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {stats}, {stats}
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] output_shape [%t, {heads}, {d}] : {flat} into {q}
  %a = fusion.gdpa %ln, %k, %v offsets(%offsets : {off}) {{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}} : {q}, {kvt}, {kvt} -> {q}
  %h = fusion.add %a, %ln : {q}
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : {q} into {flat}
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {stats}
  %y = tensor.expand_shape %yf [[0], [1, 2]] output_shape [%t, {heads}, {d}] : {flat} into {q}
  %out = fusion.add %y, %q : {q}
  return %out : {q}
}}
}}
"""


# The block's training step (forward and backward in one function, the
# backward written with the dialect's grad ops given d out) and its backward
# alone (from what the forward saves: ln_q, h and the norms' statistics):
# name: (heads, D, L_kv). No kernel takes fusion.norm_attention_grad yet:
# fusion-fuse forms the step's forward alone, saving ln_q and h for the
# backward's ops (four kernels for the step: the FlashNormAttention forward,
# rms_norm_grad, gdpa_grad, layer_norm_grad; fusion-plan-kernels folds
# dh + dq1 into the gdpa_grad's dQ epilogue and the outer residual's add
# into the layer_norm_grad as its residual), three for the backward alone.
TRAINS = {"kunlun_train_h2": (2, 128, 128), "kunlun_train_h4": (4, 128, 128)}
# The same step with jagged q (HSTU's layout: q, out, d out [T, H, D] by
# offsets): name: (heads, D, L_kv, offsets type).
JAGGED_TRAINS = {"kunlun_train_jagged_h2": (2, 128, 128, "i32"),
                 "train_jagged_d64_kv40": (3, 64, 40, "i64")}
BLOCK_GRADS = {"kunlun_backward_h2": (2, 128, 128), "kunlun_backward_h4": (4, 128, 128)}


def block_types(heads, d, kv):
    hd = heads * d
    return dict(q=f"tensor<?x?x{heads}x{d}xbf16>", flat=f"tensor<?x?x{hd}xbf16>",
                kv=f"tensor<?x{kv}x{heads}x{d}xbf16>", w=f"tensor<{hd}xbf16>",
                pg=f"tensor<{hd}xf32>", stats="tensor<?x?xf32>")


def block_backward_lines(heads, d, kv):
    """The backward given %dout, %q, %qf, %ln, %hf, %m, %r, %rr, %k, %v,
    %lnw, %rmsw, %b, %l: defines %dq, %dk, %dv, %dlw, %dlb, %drw."""
    t = block_types(heads, d, kv)
    q, flat, kvt, w, pg, st = t["q"], t["flat"], t["kv"], t["w"], t["pg"], t["stats"]
    shape = f"output_shape [%b, %l, {heads}, {d}]"
    return f"""  %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]] : {q} into {flat}
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rmsw : {w}) : {flat}, {flat}, {st} -> {flat}, {pg}
  %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] {shape} : {flat} into {q}
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v {{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}}
      : {q}, {q}, {kvt}, {kvt} -> {q}, {kvt}, {kvt}
  %dlnq = fusion.add %dh, %dq1 : {q}
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1], [2, 3]] : {q} into {flat}
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lnw : {w}) {{with_bias_grad}}
      : {flat}, {flat}, {st}, {st} -> {flat}, {pg}, {pg}
  %dqln = tensor.expand_shape %dqlnf [[0], [1], [2, 3]] {shape} : {flat} into {q}
  %dq = fusion.add %dqln, %dout : {q}
"""


def train_program(name, heads, d, kv):
    t = block_types(heads, d, kv)
    q, flat, kvt, w, pg, st = t["q"], t["flat"], t["kv"], t["w"], t["pg"], t["stats"]
    results = f"{q}, {q}, {kvt}, {kvt}, {pg}, {pg}, {pg}"
    return f"""// {name}: the Kunlun block's training step, forward and backward given d out (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%q: {q}, %k: {kvt}, %v: {kvt}, %lnw: {w}, %lnb: {w}, %rmsw: {w}, %dout: {q})
    -> ({results}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : {q}
  %l = tensor.dim %q, %c1 : {q}
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : {q} into {flat}
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : {w}) bias(%lnb : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {st}, {st}
  %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [%b, %l, {heads}, {d}] : {flat} into {q}
  %a = fusion.gdpa %ln, %k, %v {{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}} : {q}, {kvt}, {kvt} -> {q}
  %h = fusion.add %a, %ln : {q}
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : {q} into {flat}
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {st}
  %y = tensor.expand_shape %yf [[0], [1], [2, 3]] output_shape [%b, %l, {heads}, {d}] : {flat} into {q}
  %out = fusion.add %y, %q : {q}
{block_backward_lines(heads, d, kv)}  return %out, %dq, %dk, %dv, %dlw, %dlb, %drw : {results}
}}
}}
"""


def jagged_train_program(name, heads, d, kv, odt):
    hd = heads * d
    q = f"tensor<?x{heads}x{d}xbf16>"
    flat = f"tensor<?x{hd}xbf16>"
    kvt = f"tensor<?x{kv}x{heads}x{d}xbf16>"
    w, pg = f"tensor<{hd}xbf16>", f"tensor<{hd}xf32>"
    off = f"tensor<?x{odt}>"
    st = "tensor<?xf32>"
    shape = f"output_shape [%t, {heads}, {d}]"
    results = f"{q}, {q}, {kvt}, {kvt}, {pg}, {pg}, {pg}"
    return f"""// {name}: the Kunlun block's training step with q jagged by offsets, forward and backward given d out (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%q: {q}, %k: {kvt}, %v: {kvt}, %offsets: {off}, %lnw: {w}, %lnb: {w}, %rmsw: {w}, %dout: {q})
    -> ({results}) {{
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : {q}
  %qf = tensor.collapse_shape %q [[0], [1, 2]] : {q} into {flat}
  %lnf, %m, %r = fusion.layer_norm %qf weight(%lnw : {w}) bias(%lnb : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {st}, {st}
  %ln = tensor.expand_shape %lnf [[0], [1, 2]] {shape} : {flat} into {q}
  %a = fusion.gdpa %ln, %k, %v offsets(%offsets : {off}) {{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}} : {q}, {kvt}, {kvt} -> {q}
  %h = fusion.add %a, %ln : {q}
  %hf = tensor.collapse_shape %h [[0], [1, 2]] : {q} into {flat}
  %yf, %rr = fusion.rms_norm %hf weight(%rmsw : {w}) {{epsilon = {BLOCK_EPS:.1e} : f32}} : {flat} -> {flat}, {st}
  %y = tensor.expand_shape %yf [[0], [1, 2]] {shape} : {flat} into {q}
  %out = fusion.add %y, %q : {q}
  %doutf = tensor.collapse_shape %dout [[0], [1, 2]] : {q} into {flat}
  %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%rmsw : {w}) : {flat}, {flat}, {st} -> {flat}, {pg}
  %dh = tensor.expand_shape %dhf [[0], [1, 2]] {shape} : {flat} into {q}
  %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v offsets(%offsets : {off}) {{activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}}
      : {q}, {q}, {kvt}, {kvt} -> {q}, {kvt}, {kvt}
  %dlnq = fusion.add %dh, %dq1 : {q}
  %dlnqf = tensor.collapse_shape %dlnq [[0], [1, 2]] : {q} into {flat}
  %dqlnf, %dlw, %dlb = fusion.layer_norm_grad %dlnqf, %qf, %m, %r weight(%lnw : {w}) {{with_bias_grad}}
      : {flat}, {flat}, {st}, {st} -> {flat}, {pg}, {pg}
  %dqln = tensor.expand_shape %dqlnf [[0], [1, 2]] {shape} : {flat} into {q}
  %dq = fusion.add %dqln, %dout : {q}
  return %out, %dq, %dk, %dv, %dlw, %dlb, %drw : {results}
}}
}}
"""


def block_grad_program(name, heads, d, kv):
    t = block_types(heads, d, kv)
    q, flat, kvt, w, pg, st = t["q"], t["flat"], t["kv"], t["w"], t["pg"], t["stats"]
    results = f"{q}, {kvt}, {kvt}, {pg}, {pg}, {pg}"
    return f"""// {name}: the Kunlun block's backward given d out and what its forward saved (ln_q, h, LayerNorm mean and rstd, RMSNorm rstd) (bench/attention/gen_attention.py)
module attributes {{fusion.target = #fusion.target<"sm_90a">}} {{
func.func @{name}(%dout: {q}, %q: {q}, %k: {kvt}, %v: {kvt}, %lnw: {w}, %rmsw: {w}, %ln: {q}, %h: {q},
    %m: {st}, %r: {st}, %rr: {st}) -> ({results}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : {q}
  %l = tensor.dim %q, %c1 : {q}
  %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : {q} into {flat}
  %hf = tensor.collapse_shape %h [[0], [1], [2, 3]] : {q} into {flat}
{block_backward_lines(heads, d, kv)}  return %dq, %dk, %dv, %dlw, %dlb, %drw : {results}
}}
}}
"""


def jagged_block_entry(name, kind, heads, d, kv, odt, grads):
    """The manifest entry of a jagged block program: `kind` "block" (the
    forward) or "train" (its training step: dout after the parameters, the
    gradients `grads` after out)."""
    hd, qs, kvs = heads * d, f"bf16[T,{heads},{d}]", f"bf16[B,{kv},{heads},{d}]"
    dout = f" dout: {qs};" if kind == "train" else ""
    return {
        "name": name, kind: True, "jagged": True, "offsets_dtype": odt,
        "heads": heads, "d": d, "dv": d, "kv": kv, "activation": "gelu_tanh",
        "scale": 1.0, "dtype": "bf16", "eps": BLOCK_EPS,
        "signature": (f"q: {qs}; k: {kvs}; v: {kvs}; offsets: {odt}[B1]; "
                      f"lnw: bf16[{hd}]; lnb: bf16[{hd}]; rmsw: bf16[{hd}];{dout} "
                      f"out: {qs}{grads}"),
    }


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
    for name, (heads, d, dv, kv, act, scale, dtype, odt) in JAGGED.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(jagged_program(name, heads, d, dv, kv, act, scale, dtype, odt))
        manifest.append({
            "name": name, "jagged": True, "offsets_dtype": odt, "heads": heads, "d": d,
            "dv": dv, "kv": kv, "activation": act, "scale": scale, "dtype": dtype,
            "signature": (f"q: {dtype}[T,{heads},{d}]; k: {dtype}[B,{kv},{heads},{d}]; "
                          f"v: {dtype}[B,{kv},{heads},{dv}]; offsets: {odt}[B1]; "
                          f"out: {dtype}[T,{heads},{dv}]"),
        })
    for name, (heads, d, dv, kv, act, scale, dtype, odt, residual) in RESIDUALS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(residual_program(name, heads, d, dv, kv, act, scale, dtype, odt, residual))
        tokens = "T" if odt else "B,L"
        sig = (f"q: {dtype}[{tokens},{heads},{d}]; k: {dtype}[B,{kv},{heads},{d}]; "
               f"v: {dtype}[B,{kv},{heads},{dv}]; ")
        if odt:
            sig += f"offsets: {odt}[B1]; "
        if residual == "own":
            sig += f"r: {dtype}[{tokens},{heads},{dv}]; "
        sig += f"out: {dtype}[{tokens},{heads},{dv}]"
        entry = {"name": name, "residual": residual, "heads": heads, "d": d, "dv": dv,
                 "kv": kv, "activation": act, "scale": scale, "dtype": dtype,
                 "signature": sig}
        if odt:
            entry.update(jagged=True, offsets_dtype=odt)
        manifest.append(entry)
    for name, (heads, d, dv, kv, act, scale, dtype) in GRADS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(grad_program(name, heads, d, dv, kv, act, scale, dtype))
        manifest.append({
            "name": name, "grad": True, "heads": heads, "d": d, "dv": dv, "kv": kv,
            "activation": act, "scale": scale, "dtype": dtype,
            "signature": (f"do: {dtype}[B,L,{heads},{dv}]; q: {dtype}[B,L,{heads},{d}]; "
                          f"k: {dtype}[B,{kv},{heads},{d}]; v: {dtype}[B,{kv},{heads},{dv}]; "
                          f"dq: {dtype}[B,L,{heads},{d}]; dk: {dtype}[B,{kv},{heads},{d}]; "
                          f"dv: {dtype}[B,{kv},{heads},{dv}]"),
        })
    for name, (heads, d, dv, kv, act, scale, dtype, odt) in JAGGED_GRADS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(jagged_grad_program(name, heads, d, dv, kv, act, scale, dtype, odt))
        manifest.append({
            "name": name, "grad": True, "jagged": True, "offsets_dtype": odt, "heads": heads,
            "d": d, "dv": dv, "kv": kv, "activation": act, "scale": scale, "dtype": dtype,
            "signature": (f"do: {dtype}[T,{heads},{dv}]; q: {dtype}[T,{heads},{d}]; "
                          f"k: {dtype}[B,{kv},{heads},{d}]; v: {dtype}[B,{kv},{heads},{dv}]; "
                          f"offsets: {odt}[B1]; dq: {dtype}[T,{heads},{d}]; "
                          f"dk: {dtype}[B,{kv},{heads},{d}]; dv: {dtype}[B,{kv},{heads},{dv}]"),
        })
    for name, (heads, d, dv, kv, act, scale, dtype, odt, residual) in RESIDUAL_GRADS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(residual_grad_program(name, heads, d, dv, kv, act, scale, dtype, odt,
                                          residual))
        tokens = "T" if odt else "B,L"
        sig = (f"do: {dtype}[{tokens},{heads},{dv}]; q: {dtype}[{tokens},{heads},{d}]; "
               f"k: {dtype}[B,{kv},{heads},{d}]; v: {dtype}[B,{kv},{heads},{dv}]; ")
        if odt:
            sig += f"offsets: {odt}[B1]; "
        if residual == "own":
            sig += f"r: {dtype}[{tokens},{heads},{d}]; "
        sig += (f"dq: {dtype}[{tokens},{heads},{d}]; dk: {dtype}[B,{kv},{heads},{d}]; "
                f"dv: {dtype}[B,{kv},{heads},{dv}]")
        entry = {"name": name, "grad": True, "residual": residual, "heads": heads, "d": d,
                 "dv": dv, "kv": kv, "activation": act, "scale": scale, "dtype": dtype,
                 "signature": sig}
        if odt:
            entry.update(jagged=True, offsets_dtype=odt)
        manifest.append(entry)
    for name, (heads, d, kv, act, scale, weight, grad_residual) in PROLOGUE_GRADS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(prologue_grad_program(name, heads, d, kv, act, scale, weight,
                                          grad_residual))
        sig = (f"dout: bf16[B,L,{heads},{d}]; q: bf16[B,L,{heads},{d}]; "
               f"k: bf16[B,{kv},{heads},{d}]; v: bf16[B,{kv},{heads},{d}]; "
               f"x: bf16[B,L,{heads},{d}]; rstd: f32[B,L]; ")
        if weight:
            sig += f"w: bf16[{heads * d}]; "
        sig += (f"dq: bf16[B,L,{heads},{d}]; dk: bf16[B,{kv},{heads},{d}]; "
                f"dv: bf16[B,{kv},{heads},{d}]")
        if weight:
            sig += f"; dw: f32[{heads * d}]"
        manifest.append({"name": name, "grad": True, "rms_prologue": True,
                         "rms_weight": weight, "grad_residual": grad_residual,
                         "heads": heads, "d": d, "dv": d, "kv": kv, "activation": act,
                         "scale": scale, "dtype": "bf16", "signature": sig})
    for name, (heads, d, kv) in BLOCKS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(block_program(name, heads, d, kv))
        hd = heads * d
        manifest.append({
            "name": name, "block": True, "heads": heads, "d": d, "dv": d, "kv": kv,
            "activation": "gelu_tanh", "scale": 1.0, "dtype": "bf16", "eps": BLOCK_EPS,
            "signature": (f"q: bf16[B,L,{heads},{d}]; k: bf16[B,{kv},{heads},{d}]; "
                          f"v: bf16[B,{kv},{heads},{d}]; lnw: bf16[{hd}]; lnb: bf16[{hd}]; "
                          f"rmsw: bf16[{hd}]; out: bf16[B,L,{heads},{d}]"),
        })
    for name, (heads, d, kv, odt) in JAGGED_BLOCKS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(jagged_block_program(name, heads, d, kv, odt))
        manifest.append(jagged_block_entry(name, "block", heads, d, kv, odt, ""))
    for kind, table, writer in (("train", TRAINS, train_program),
                                ("block_grad", BLOCK_GRADS, block_grad_program)):
        for name, (heads, d, kv) in table.items():
            with open(os.path.join(out, name + ".mlir"), "w") as f:
                f.write(writer(name, heads, d, kv))
            hd = heads * d
            qs, kvs = f"bf16[B,L,{heads},{d}]", f"bf16[B,{kv},{heads},{d}]"
            grads = (f"dq: {qs}; dk: {kvs}; dv: {kvs}; dlnw: f32[{hd}]; dlnb: f32[{hd}]; "
                     f"drmsw: f32[{hd}]")
            if kind == "train":
                sig = (f"q: {qs}; k: {kvs}; v: {kvs}; lnw: bf16[{hd}]; lnb: bf16[{hd}]; "
                       f"rmsw: bf16[{hd}]; dout: {qs}; out: {qs}; {grads}")
            else:
                sig = (f"dout: {qs}; q: {qs}; k: {kvs}; v: {kvs}; lnw: bf16[{hd}]; "
                       f"rmsw: bf16[{hd}]; ln: {qs}; h: {qs}; mean: f32[B,L]; rstd: f32[B,L]; "
                       f"rms_rstd: f32[B,L]; {grads}")
            manifest.append({
                "name": name, kind: True, "heads": heads, "d": d, "dv": d, "kv": kv,
                "activation": "gelu_tanh", "scale": 1.0, "dtype": "bf16", "eps": BLOCK_EPS,
                "signature": sig,
            })
    for name, (heads, d, kv, odt) in JAGGED_TRAINS.items():
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(jagged_train_program(name, heads, d, kv, odt))
        hd, qs, kvs = heads * d, f"bf16[T,{heads},{d}]", f"bf16[B,{kv},{heads},{d}]"
        manifest.append(jagged_block_entry(
            name, "train", heads, d, kv, odt,
            f"; dq: {qs}; dk: {kvs}; dv: {kvs}; dlnw: f32[{hd}]; dlnb: f32[{hd}]; "
            f"drmsw: f32[{hd}]"))
    with open(os.path.join(out, "attention.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"gen_attention: {len(manifest)} programs in {out}")


if __name__ == "__main__":
    main()
