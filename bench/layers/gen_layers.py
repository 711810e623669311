#!/usr/bin/env python3
"""Writes the layer programs of issue 14 as .mlir files, one program per file,
written with unfused ops only (fusion.rms_norm, fusion.layer_norm,
fusion.matmul, fusion.add, fusion.mul), the way a PyTorch user writes the
layer: dynamic token count (`?`), bf16, sm_90a. Also writes layers.json, the
manifest that test/gpu/test_layers_gpu.py, test/gpu/test_rows_gpu.py,
bench/bench_layers.py and bench/bench_norms.py read (kind, H, epsilon, the
arguments in call order with the outputs last, and the loader signature, in
which the token count is the size name M).

    python3 bench/layers/gen_layers.py OUTDIR        # OUTDIR/<name>[_unfused].mlir, layers.json
    python3 bench/layers/gen_layers.py OUTDIR --print llama_prenorm_h1024

Programs (H = 768, 1024, 2048, 4096; the row ops also at H = 1000 and 1001):
  llama_prenorm_h{H}          y = Linear(RMSNorm(x) with weight g), W [H, H] as stored ([out, in])
  llama_prenorm_mulweight_h{H} the same with HF Llama's RMSNorm: weight * rms_norm(x) as a fusion.mul
  qwen3_q_norm_h{H}           y = q_norm(q_proj(x).view(M, H / 128, 128)).view(M, H): Qwen3's
                              per-head RMSNorm (weight [128], eps 1e-6) after the projection
                              (W [H, H] as stored), the heads view as tensor.expand_shape and
                              the output collapsed back to [M, H] (the libraries' ABI)
  bert_postnorm_h{H}          y = LayerNorm(Linear(x, W, b) + residual) with gamma, beta
  bert_postnorm_addbias_h{H}  the same with the bias as a broadcasting fusion.add
  llama_o_proj_h{H}           y = r + Linear(x), W [H, H] ([out, in]), no bias: the residual
                              stream after Llama's o_proj / down_proj (fusion.matmul, fusion.add)
  gpt2_c_proj_h{H}            the same with the Linear's bias (GPT-2's / ViT's pre-LN c_proj)
  neox_parallel_h{H}          y = Linear(m, Wm, bm) + Linear(a, Wa, ba) + x: GPT-NeoX's (Pythia's)
                              parallel residual as HF writes it (the projections summed first),
                              Wa [H, H], Wm [H, 4H] ([out, in]), m [M, 4H] the MLP's activations
  olmo2_post_h{H}             y = r + RMSNorm(Linear(x), g): OLMo 2's (and Gemma 2 / 3's) sandwich
                              norm after o_proj, the norm's output added to the residual stream
                              (W [H, H], [out, in], no bias; eps 1e-6); also at H = 256 (a row
                              one CTA's consumers finish)
  ln_prenorm_h{H}             y = Linear(LayerNorm(x) with gamma, beta) with W [H, H] ([out, in])
                              and bias b: nn.LayerNorm then nn.Linear
  rms_norm_h{H}               y, rstd = RMSNorm(x) with weight
  layer_norm_h{H}             y, mean, rstd = LayerNorm(x) with weight and bias
  rms_norm_infer_h{H}         y = RMSNorm(x), layer_norm_infer_h{H} y = LayerNorm(x): the
  layer_norm_infer_h{H}       inference forms, statistics unused (not written); H = 768 .. 4096
  add_rowbias_h{H}            y = x + b       ([M, H] + [H])
  add_h{H}                    y = x + r       ([M, H] + [M, H])
  mul_col_h{H}                y = x * c       ([M, H] bf16 * [M, 1] f32)
  rope_h{H}                   y = x cos + rotate_half(x) sin per head of 128 (Llama's q after
                              q_proj; cos, sin [M, 128] bf16, the tables per token)
  rope_neox_h{H}              the same over the first 32 columns of each head of 128 (GPT-NeoX's
                              rotary_pct 0.25), the rest passed through
  rope_gptj_h{H}              GPT-J's pairs (2i, 2i + 1) over the first 64 columns of heads of 256
  llama_q_rope_h{H}           y = rope(q_proj(RMSNorm(x) with weight g)), heads of 128, cos, sin
                              [M, 128] per token: Llama's query before attention; its fused
                              library has the rope in the GEMM (fusion-compile's default)
  neox_q_rope_h{H}            y = rope(Linear(x, W, b)) over the first 32 of each head of 128
  gptj_q_rope_h{H}            y = rope(Linear(x, W)), GPT-J's pairs over the first 64 of 256
  llama_q_rope_pos2048_h1024  llama_q_rope with tables per position [2048, 128]: token m's
                              row m mod 2048 (B sequences of 2048 flattened)
  rms_norm_grad_h{H}          dx, dg = RMSNorm's backward (dy, x, saved rstd, weight g)
  layer_norm_grad_h{H}        dx, dgamma, dbeta = LayerNorm's backward (dy, x, mean, rstd, gamma)
  rms_norm_grad_res_h{H}      the same plus the residual branch's gradient, as a user writes it:
  layer_norm_grad_res_h{H}    dx = the norm's input gradient + dr (a fusion.add of [M, H] bf16,
                              which fusion-plan-kernels folds into the norm gradient's residual);
                              H = 768, 1000, 1001, 4096
  layer_norm_grad_res32_h{H}  the same with an f32 dr beside bf16 data; H = 768, 1000
  linear_wgrad_h{H}           dW = dy^T x, nn.Linear's weight gradient ([H, H] from [M, H] x 2)
  train_step_ln_h{H}          the same with LayerNorm (weight gamma, bias beta): y, dx, dW1,
                              dgamma, dbeta, dW2
  train_step_res_{rms,ln}_h{H} the same as a residual block, y = fc2(norm(h)) + h, h = fc1(x)
                              (H = 256, 1024; train_step_{rms,ln}_h256 too: a row one CTA holds)
  train_step_rms_h{H}         a training step of Linear -> RMSNorm (weight g) -> Linear, given
                              the output gradient dy: y, dx, dW1, dg, dW2 in one function

build/gpu/layers/lib<name>.so is <name>.mlir compiled by fusion-compile's
default pipeline (fusion-fuse, then the kernels), lib<name>_unfused.so is
<name>_unfused.mlir (the same program, its function named <name>_unfused)
compiled without fusion-fuse (bench/layers/build_layers.sh). The ln_prenorm
programs also get lib<name>_lazyln.so, from <name>_lazyln.mlir compiled with
fusion-compile --lazy-layer-norm: the LayerNorm deferred into the GEMM (the
Lazy Pre-Norm LayerNorm prologue; without the option the default pipeline
keeps it a row kernel before the GEMM).
"""
import argparse
import json
import os

LAYER_H = (768, 1024, 2048, 4096)
ROW_H = LAYER_H + (1000, 1001)  # 1001: rows that are not a multiple of 16 bytes
NARROW_GRAD_H = (192, 384)  # norm gradients of rows narrower than 32 x 3 vectors
RES_H = (768, 1000, 1001, 4096)  # norm gradients plus a residual gradient
RES32_H = (768, 1000)  # ... an f32 one
TRAIN_H = (512,) + LAYER_H  # the training step and its weight gradient (issue 16's d = 512 too)
TRAIN_RES_H = (256, 1024)  # train_step_res_*: the step as a residual block
LLAMA_EPS = 1e-5
RMS_EPS = 1e-6
LN_EPS = 1e-12  # BERT's LayerNorm
PRE_LN_EPS = 1e-5  # nn.LayerNorm's default (a pre-LN block)

# Kinds that also get a library compiled with --lazy-layer-norm (variant lazyln).
LAZY_LN_KINDS = ("ln_prenorm",)

HEADER = 'module attributes {fusion.target = #fusion.target<"sm_90a">} {\n'


def ty(shape, dtype="bf16"):
    """MLIR tensor type; the size "M" is the dynamic token count."""
    return "tensor<" + "x".join("?" if d == "M" else str(d) for d in shape) + f"x{dtype}>"


def program(name, kind, h, args, results, body, eps=None, params=None):
    """args / results: (name, dtype, shape) in call order; body: MLIR lines
    that define the results' SSA values (named after the results); params:
    the layer module's other constructor arguments (layers_ref)."""
    sig = ", ".join(f"%{n}: {ty(s, d)}" for n, d, s in args)
    res_types = ", ".join(ty(s, d) for _, d, s in results)
    res_names = ", ".join(f"%{n}" for n, _, _ in results)
    text = (f"func.func @{name}({sig}) -> ({res_types}) {{\n"
            + "".join(f"  {line}\n" for line in body)
            + f"  return {res_names} : {res_types}\n}}\n")
    loader = "; ".join(f"{n}: {d}[{','.join(str(x) for x in s)}]" for n, d, s in args + results)
    return dict(name=name, kind=kind, h=h, eps=eps, params=params or {},
                inputs=[dict(name=n, dtype=d, shape=list(s)) for n, d, s in args],
                outputs=[dict(name=n, dtype=d, shape=list(s)) for n, d, s in results],
                signature=loader, mlir=HEADER + text + "}\n")


def llama_prenorm(h, mul_weight=False):
    x, g, w = ty(("M", h)), ty((h,)), ty((h, h))
    if mul_weight:  # HF LlamaRMSNorm: weight * rms_norm(x).to(bf16)
        norm = [f"%n0 = fusion.rms_norm %x {{epsilon = {LLAMA_EPS:e} : f32}} : {x} -> {x}",
                f"%n = fusion.mul %n0, %g : {x}, {g}"]
    else:  # nn.RMSNorm(H, eps) / F.rms_norm(x, (H,), g, eps)
        norm = [f"%n = fusion.rms_norm %x weight(%g : {g}) {{epsilon = {LLAMA_EPS:e} : f32}}"
                f" : {x} -> {x}"]
    name = f"llama_prenorm{'_mulweight' if mul_weight else ''}_h{h}"
    return program(name, "llama_prenorm_mulweight" if mul_weight else "llama_prenorm", h,
                   [("x", "bf16", ("M", h)), ("g", "bf16", (h,)), ("w", "bf16", (h, h))],
                   [("y", "bf16", ("M", h))],
                   norm + [f"%y = fusion.matmul %n, %w {{transpose_rhs}} : {x}, {w} -> {x}"],
                   eps=LLAMA_EPS)


QK_HEAD_DIM = 128  # Qwen3's head_dim


def qwen3_q_norm(h, d=QK_HEAD_DIM):
    """Qwen3's query path before RoPE: q_proj, the heads view, the per-head
    RMSNorm over d with its weight [d] (Qwen3RMSNorm), flattened back."""
    x, w, g = ty(("M", h)), ty((h, h)), ty((d,))
    heads = ty(("M", h // d, d))
    body = ["%c0 = arith.constant 0 : index",
            f"%m = tensor.dim %x, %c0 : {x}",
            f"%q = fusion.matmul %x, %w {{transpose_rhs}} : {x}, {w} -> {x}",
            f"%e = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, {h // d}, {d}]"
            f" : {x} into {heads}",
            f"%n = fusion.rms_norm %e weight(%g : {g}) {{epsilon = {RMS_EPS:e} : f32}}"
            f" : {heads} -> {heads}",
            f"%y = tensor.collapse_shape %n [[0], [1, 2]] : {heads} into {x}"]
    return program(f"qwen3_q_norm_h{h}", "qwen3_q_norm", h,
                   [("x", "bf16", ("M", h)), ("w", "bf16", (h, h)), ("g", "bf16", (d,))],
                   [("y", "bf16", ("M", h))], body, eps=RMS_EPS, params={"head_dim": d})


def bert_postnorm(h, add_bias=False):
    x, v, w, stat = ty(("M", h)), ty((h,)), ty((h, h)), ty(("M",), "f32")
    if add_bias:  # x @ W^T + b written as two ops
        linear = [f"%l0 = fusion.matmul %x, %w {{transpose_rhs}} : {x}, {w} -> {x}",
                  f"%l = fusion.add %l0, %b : {x}, {v}"]
    else:  # nn.Linear(H, H) / F.linear(x, W, b)
        linear = [f"%l = fusion.matmul %x, %w bias(%b : {v}) {{transpose_rhs}} : {x}, {w} -> {x}"]
    body = linear + [
        f"%s = fusion.add %l, %r : {x}",
        f"%y, %mean, %rstd = fusion.layer_norm %s weight(%gamma : {v}) bias(%beta : {v})"
        f" {{epsilon = {LN_EPS:e} : f32}} : {x} -> {x}, {stat}, {stat}"]
    name = f"bert_postnorm{'_addbias' if add_bias else ''}_h{h}"
    return program(name, "bert_postnorm_addbias" if add_bias else "bert_postnorm", h,
                   [("x", "bf16", ("M", h)), ("w", "bf16", (h, h)), ("b", "bf16", (h,)),
                    ("r", "bf16", ("M", h)), ("gamma", "bf16", (h,)), ("beta", "bf16", (h,))],
                   [("y", "bf16", ("M", h))], body, eps=LN_EPS)


def linear_residual(h, bias=False):
    """The residual stream after a projection, h = r + Linear(x): Llama's
    o_proj and down_proj (no bias, llama_o_proj_h{H}), GPT-2's / ViT's
    pre-LN c_proj (with its bias, gpt2_c_proj_h{H}); W [H, H] as stored."""
    x, v, w = ty(("M", h)), ty((h,)), ty((h, h))
    b = f" bias(%b : {v})" if bias else ""
    kind = "gpt2_c_proj" if bias else "llama_o_proj"
    return program(f"{kind}_h{h}", kind, h,
                   [("x", "bf16", ("M", h)), ("w", "bf16", (h, h))]
                   + ([("b", "bf16", (h,))] if bias else []) + [("r", "bf16", ("M", h))],
                   [("y", "bf16", ("M", h))],
                   [f"%p = fusion.matmul %x, %w{b} {{transpose_rhs}} : {x}, {w} -> {x}",
                    f"%y = fusion.add %r, %p : {x}"])


def neox_parallel(h):
    """GPT-NeoX's parallel residual, `mlp_output + attn_output + hidden_states`
    (HF GPTNeoXLayer with use_parallel_residual): the attention's dense (W_a
    [H, H], bias) and the MLP's dense_4h_to_h (W_m [H, 4H], bias) summed
    first, then the residual; fusion-plan-kernels reassociates it so that
    both GEMMs take a residual."""
    x, v, wa = ty(("M", h)), ty((h,)), ty((h, h))
    m, wm = ty(("M", 4 * h)), ty((h, 4 * h))
    return program(f"neox_parallel_h{h}", "neox_parallel", h,
                   [("a", "bf16", ("M", h)), ("wa", "bf16", (h, h)), ("ba", "bf16", (h,)),
                    ("m", "bf16", ("M", 4 * h)), ("wm", "bf16", (h, 4 * h)),
                    ("bm", "bf16", (h,)), ("x", "bf16", ("M", h))],
                   [("y", "bf16", ("M", h))],
                   [f"%attn = fusion.matmul %a, %wa bias(%ba : {v}) {{transpose_rhs}} : {x}, {wa} -> {x}",
                    f"%mlp = fusion.matmul %m, %wm bias(%bm : {v}) {{transpose_rhs}} : {m}, {wm} -> {x}",
                    f"%s = fusion.add %mlp, %attn : {x}",
                    f"%y = fusion.add %s, %x : {x}"])


def olmo2_post(h):
    """OLMo 2's attention output, h = r + post_attention_layernorm(o_proj(x))
    (Olmo2RMSNorm: the norm in f32, times its weight, rounded once; Gemma 2
    and 3 write the same with their own weight form): the norm after the
    projection, its output added to the residual stream. fusion-fuse forms
    the norm epilogue; with fusion-compile --post-residual fusion-plan-kernels
    folds the add into it (post_residual), else the add stays a row kernel."""
    x, g, w = ty(("M", h)), ty((h,)), ty((h, h))
    return program(f"olmo2_post_h{h}", "olmo2_post", h,
                   [("x", "bf16", ("M", h)), ("w", "bf16", (h, h)), ("g", "bf16", (h,)),
                    ("r", "bf16", ("M", h))],
                   [("y", "bf16", ("M", h))],
                   [f"%p = fusion.matmul %x, %w {{transpose_rhs}} : {x}, {w} -> {x}",
                    f"%n = fusion.rms_norm %p weight(%g : {g}) {{epsilon = {RMS_EPS:e} : f32}}"
                    f" : {x} -> {x}",
                    f"%y = fusion.add %r, %n : {x}"], eps=RMS_EPS)


# Llama-style intermediate sizes (LLaMA 2 7B: 4096 -> 11008; the others at
# about 2.7 H, multiples of 128).
MLP_I = {768: 2048, 1024: 2816, 2048: 5632, 4096: 11008}


def llama_mlp(h, inter=None):
    """The second half of a Llama decoder layer as HF writes it:
    post_attention_layernorm (RMSNorm with its weight), then LlamaMLP,
    down_proj(silu(gate_proj(n)) * up_proj(n)) (nn.Linear weights, no
    bias). fusion-fuse puts the norm in both GEMMs' prologue (Lazy
    Pre-Norm) and makes gate, up, silu and the product one GEMM (the gated
    product, `up`); unfused, it is a norm kernel, three GEMMs, an activation
    kernel and a product kernel."""
    inter = inter or MLP_I[h]
    x, g, wi, wd = ty(("M", h)), ty((h,)), ty((inter, h)), ty((h, inter))
    t = ty(("M", inter))
    return program(f"llama_mlp_h{h}", "llama_mlp", h,
                   [("x", "bf16", ("M", h)), ("g", "bf16", (h,)), ("wg", "bf16", (inter, h)),
                    ("wu", "bf16", (inter, h)), ("wd", "bf16", (h, inter))],
                   [("y", "bf16", ("M", h))],
                   [f"%n = fusion.rms_norm %x weight(%g : {g}) {{epsilon = {LLAMA_EPS:e} : f32}}"
                    f" : {x} -> {x}",
                    f"%a = fusion.matmul %n, %wg {{transpose_rhs}} : {x}, {wi} -> {t}",
                    f"%u = fusion.matmul %n, %wu {{transpose_rhs}} : {x}, {wi} -> {t}",
                    f"%s = fusion.activation %a {{activation = #fusion.activation<silu>}} : {t}",
                    f"%p = fusion.mul %s, %u : {t}",
                    f"%y = fusion.matmul %p, %wd {{transpose_rhs}} : {t}, {wd} -> {x}"],
                   eps=LLAMA_EPS, params={"inter": inter})


def gate_up(h, inter=None):
    """The gated product alone, silu(gate_proj(x)) * up_proj(x) (one gated
    GEMM after fusion-fuse): test_layers_gpu's elementwise check of the
    activation's tail."""
    inter = inter or MLP_I[h]
    x, wi, t = ty(("M", h)), ty((inter, h)), ty(("M", inter))
    return program(f"gate_up_h{h}", "gate_up", h,
                   [("x", "bf16", ("M", h)), ("wg", "bf16", (inter, h)),
                    ("wu", "bf16", (inter, h))],
                   [("y", "bf16", ("M", inter))],
                   [f"%a = fusion.matmul %x, %wg {{transpose_rhs}} : {x}, {wi} -> {t}",
                    f"%u = fusion.matmul %x, %wu {{transpose_rhs}} : {x}, {wi} -> {t}",
                    f"%s = fusion.activation %a {{activation = #fusion.activation<silu>}} : {t}",
                    f"%y = fusion.mul %s, %u : {t}"], params={"inter": inter})


def gpt2_mlp(h):
    """GPT-2's MLP: c_proj(gelu_tanh(c_fc(x))) with both biases (as
    nn.Linear(H, 4H) and nn.Linear(4H, H): weights [out, in]).
    fusion-fuse folds the gelu into c_fc's epilogue, after its bias."""
    inter = 4 * h
    x, w1, w2, v1, v = ty(("M", h)), ty((inter, h)), ty((h, inter)), ty((inter,)), ty((h,))
    t = ty(("M", inter))
    return program(f"gpt2_mlp_h{h}", "gpt2_mlp", h,
                   [("x", "bf16", ("M", h)), ("w1", "bf16", (inter, h)), ("b1", "bf16", (inter,)),
                    ("w2", "bf16", (h, inter)), ("b2", "bf16", (h,))],
                   [("y", "bf16", ("M", h))],
                   [f"%f = fusion.matmul %x, %w1 bias(%b1 : {v1}) {{transpose_rhs}} : {x}, {w1} -> {t}",
                    f"%a = fusion.activation %f {{activation = #fusion.activation<gelu_tanh>}} : {t}",
                    f"%y = fusion.matmul %a, %w2 bias(%b2 : {v}) {{transpose_rhs}} : {t}, {w2} -> {x}"])


def ln_prenorm(h):
    """nn.LayerNorm(H) (weight gamma, bias beta) then nn.Linear(H, H) (W as
    stored, [out, in], and its bias b): Lazy Pre-Norm's LayerNorm prologue
    with --lazy-layer-norm (gamma folded into W by a fusion.mul, beta W + b
    the column bias, B's column sums a 1-row GEMM)."""
    x, v, w, stat = ty(("M", h)), ty((h,)), ty((h, h)), ty(("M",), "f32")
    body = [f"%n, %mean, %rstd = fusion.layer_norm %x weight(%gamma : {v}) bias(%beta : {v})"
            f" {{epsilon = {PRE_LN_EPS:e} : f32}} : {x} -> {x}, {stat}, {stat}",
            f"%y = fusion.matmul %n, %w bias(%b : {v}) {{transpose_rhs}} : {x}, {w} -> {x}"]
    return program(f"ln_prenorm_h{h}", "ln_prenorm", h,
                   [("x", "bf16", ("M", h)), ("gamma", "bf16", (h,)), ("beta", "bf16", (h,)),
                    ("w", "bf16", (h, h)), ("b", "bf16", (h,))],
                   [("y", "bf16", ("M", h))], body, eps=PRE_LN_EPS)


def rms_norm(h, stats=True):
    """stats=False: the inference form (rms_norm_infer_h{H}), y only: its
    rstd is unused and the kernel does not write it."""
    x, g, stat = ty(("M", h)), ty((h,)), ty(("M",), "f32")
    results = [("y", "bf16", ("M", h))] + ([("rstd", "f32", ("M",))] if stats else [])
    return program(f"rms_norm{'' if stats else '_infer'}_h{h}", "rms_norm", h,
                   [("x", "bf16", ("M", h)), ("g", "bf16", (h,))], results,
                   [f"%y, %rstd = fusion.rms_norm %x weight(%g : {g}) {{epsilon = {RMS_EPS:e} : f32}}"
                    f" : {x} -> {x}, {stat}"], eps=RMS_EPS)


def layer_norm(h, stats=True):
    """stats=False: layer_norm_infer_h{H}, y only (no mean or rstd written)."""
    x, v, stat = ty(("M", h)), ty((h,)), ty(("M",), "f32")
    results = [("y", "bf16", ("M", h))]
    if stats:
        results += [("mean", "f32", ("M",)), ("rstd", "f32", ("M",))]
    return program(f"layer_norm{'' if stats else '_infer'}_h{h}", "layer_norm", h,
                   [("x", "bf16", ("M", h)), ("gamma", "bf16", (h,)), ("beta", "bf16", (h,))],
                   results,
                   [f"%y, %mean, %rstd = fusion.layer_norm %x weight(%gamma : {v}) bias(%beta : {v})"
                    f" {{epsilon = {LN_EPS:e} : f32}} : {x} -> {x}, {stat}, {stat}"], eps=LN_EPS)


def rms_norm_grad(h):
    x, g, stat, pg = ty(("M", h)), ty((h,)), ty(("M",), "f32"), ty((h,), "f32")
    return program(f"rms_norm_grad_h{h}", "rms_norm_grad", h,
                   [("dy", "bf16", ("M", h)), ("x", "bf16", ("M", h)), ("rstd", "f32", ("M",)),
                    ("g", "bf16", (h,))],
                   [("dx", "bf16", ("M", h)), ("dg", "f32", (h,))],
                   [f"%dx, %dg = fusion.rms_norm_grad %dy, %x, %rstd weight(%g : {g})"
                    f" : {x}, {x}, {stat} -> {x}, {pg}"], eps=RMS_EPS)


def layer_norm_grad(h):
    x, v, stat, pg = ty(("M", h)), ty((h,)), ty(("M",), "f32"), ty((h,), "f32")
    return program(f"layer_norm_grad_h{h}", "layer_norm_grad", h,
                   [("dy", "bf16", ("M", h)), ("x", "bf16", ("M", h)), ("mean", "f32", ("M",)),
                    ("rstd", "f32", ("M",)), ("gamma", "bf16", (h,))],
                   [("dx", "bf16", ("M", h)), ("dgamma", "f32", (h,)), ("dbeta", "f32", (h,))],
                   [f"%dx, %dgamma, %dbeta = fusion.layer_norm_grad %dy, %x, %mean, %rstd"
                    f" weight(%gamma : {v}) {{with_bias_grad}}"
                    f" : {x}, {x}, {stat}, {stat} -> {x}, {pg}, {pg}"], eps=LN_EPS)


def rms_norm_grad_res(h):
    """RMSNorm's backward plus the gradient dr reaching x through the
    residual branch of x + f(rms_norm(x)): dx = rms_norm_grad(...).dx + dr."""
    x, g, stat, pg = ty(("M", h)), ty((h,)), ty(("M",), "f32"), ty((h,), "f32")
    return program(f"rms_norm_grad_res_h{h}", "rms_norm_grad_res", h,
                   [("dy", "bf16", ("M", h)), ("x", "bf16", ("M", h)), ("rstd", "f32", ("M",)),
                    ("g", "bf16", (h,)), ("dr", "bf16", ("M", h))],
                   [("dx", "bf16", ("M", h)), ("dg", "f32", (h,))],
                   [f"%dxn, %dg = fusion.rms_norm_grad %dy, %x, %rstd weight(%g : {g})"
                    f" : {x}, {x}, {stat} -> {x}, {pg}",
                    f"%dx = fusion.add %dxn, %dr : {x}"], eps=RMS_EPS)


def layer_norm_grad_res(h, dr_dtype="bf16"):
    """LayerNorm's backward plus the residual branch's gradient dr (bf16, or
    f32 beside the bf16 data: kind layer_norm_grad_res32)."""
    x, v, stat, pg = ty(("M", h)), ty((h,)), ty(("M",), "f32"), ty((h,), "f32")
    dr = ty(("M", h), dr_dtype)
    suffix = "" if dr_dtype == "bf16" else "32"
    add = f"%dx = fusion.add %dxn, %dr : {x}" + ("" if dr_dtype == "bf16" else f", {dr}")
    return program(f"layer_norm_grad_res{suffix}_h{h}", f"layer_norm_grad_res{suffix}", h,
                   [("dy", "bf16", ("M", h)), ("x", "bf16", ("M", h)), ("mean", "f32", ("M",)),
                    ("rstd", "f32", ("M",)), ("gamma", "bf16", (h,)), ("dr", dr_dtype, ("M", h))],
                   [("dx", "bf16", ("M", h)), ("dgamma", "f32", (h,)), ("dbeta", "f32", (h,))],
                   [f"%dxn, %dgamma, %dbeta = fusion.layer_norm_grad %dy, %x, %mean, %rstd"
                    f" weight(%gamma : {v}) {{with_bias_grad}}"
                    f" : {x}, {x}, {stat}, {stat} -> {x}, {pg}, {pg}", add], eps=LN_EPS)


def linear_wgrad(h):
    x, w = ty(("M", h)), ty((h, h))
    return program(f"linear_wgrad_h{h}", "linear_wgrad", h,
                   [("dy", "bf16", ("M", h)), ("x", "bf16", ("M", h))],
                   [("dw", "bf16", (h, h))],
                   [f"%dw = fusion.matmul %dy, %x {{transpose_lhs}} : {x}, {x} -> {w}"])


def train_step(h, norm, skip=False):
    """A training step linear -> norm -> linear (nn.Linear weights, no
    biases), forward and backward from one function. norm "rms": LlamaRMSNorm
    (weight g; the forward saves rstd, its gradient returns dg); "ln":
    nn.LayerNorm (weight gamma, bias beta; saves mean and rstd, returns
    dgamma and dbeta). skip (train_step_res_*): a residual block around the
    norm and the second linear, y = fc2(norm(h)) + h with h = fc1(x); dy
    reaches h through the skip too, the norm gradient's residual (regrouped,
    the grad epilogue adds it to dx)."""
    x, w, v, stat, gf = ty(("M", h)), ty((h, h)), ty((h,)), ty(("M",), "f32"), ty((h,), "f32")
    if norm == "rms":
        params, grads, eps = ("g",), ("dg",), LLAMA_EPS
        forward = (f"%n, %rstd = fusion.rms_norm %h weight(%g : {v}) {{epsilon = {eps:e} : f32}}"
                   f" : {x} -> {x}, {stat}")
        res = f" residual(%dy : {x})" if skip else ""
        backward = (f"%dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : {v}){res}"
                    f" : {x}, {x}, {stat} -> {x}, {gf}")
    else:
        params, grads, eps = ("gamma", "beta"), ("dgamma", "dbeta"), LN_EPS
        forward = (f"%n, %mean, %rstd = fusion.layer_norm %h weight(%gamma : {v}) bias(%beta : {v})"
                   f" {{epsilon = {eps:e} : f32}} : {x} -> {x}, {stat}, {stat}")
        res = f" residual(%dy : {x})" if skip else ""
        backward = (f"%dh, %dgamma, %dbeta = fusion.layer_norm_grad %dn, %h, %mean, %rstd"
                    f" weight(%gamma : {v}){res} {{with_bias_grad}} : {x}, {x}, {stat}, {stat} -> {x}, {gf}, {gf}")
    body = [
        f"%h = fusion.matmul %x, %w1 {{transpose_rhs}} : {x}, {w} -> {x}",
        forward]
    if skip:
        body += [f"%y0 = fusion.matmul %n, %w2 {{transpose_rhs}} : {x}, {w} -> {x}",
                 f"%y = fusion.add %y0, %h : {x}"]
    else:
        body += [f"%y = fusion.matmul %n, %w2 {{transpose_rhs}} : {x}, {w} -> {x}"]
    body += [
        f"%dn = fusion.matmul %dy, %w2 : {x}, {w} -> {x}",
        f"%dw2 = fusion.matmul %dy, %n {{transpose_lhs}} : {x}, {x} -> {w}",
        backward,
        f"%dx = fusion.matmul %dh, %w1 : {x}, {w} -> {x}",
        f"%dw1 = fusion.matmul %dh, %x {{transpose_lhs}} : {x}, {x} -> {w}"]
    kind = f"train_step_res_{norm}" if skip else f"train_step_{norm}"
    return program(f"{kind}_h{h}", kind, h,
                   [("x", "bf16", ("M", h)), ("w1", "bf16", (h, h))]
                   + [(p, "bf16", (h,)) for p in params]
                   + [("w2", "bf16", (h, h)), ("dy", "bf16", ("M", h))],
                   [("y", "bf16", ("M", h)), ("dx", "bf16", ("M", h)), ("dw1", "bf16", (h, h))]
                   + [(g, "f32", (h,)) for g in grads] + [("dw2", "bf16", (h, h))],
                   body, eps=eps)


def elementwise(kind, h):
    x = ty(("M", h))
    rhs = {"add_rowbias": ("b", "bf16", (h,)), "add": ("r", "bf16", ("M", h)),
           "mul_col": ("c", "f32", ("M", 1))}[kind]
    op = "mul" if kind == "mul_col" else "add"
    types = x if rhs[2] == ("M", h) else f"{x}, {ty(rhs[2], rhs[1])}"
    return program(f"{kind}_h{h}", kind, h, [("x", "bf16", ("M", h)), rhs],
                   [("y", "bf16", ("M", h))], [f"%y = fusion.{op} %x, %{rhs[0]} : {types}"])


def rope(kind, h):
    """fusion.rope of [M, h] bf16 by per-token tables [M, R] bf16."""
    head, rot, pairs = {"rope": (128, 128, False), "rope_neox": (128, 32, False),
                        "rope_gptj": (256, 64, True)}[kind]
    attrs = f"head_dim = {head} : i64" + (", interleaved" if pairs else "")
    return program(f"{kind}_h{h}", kind, h,
                   [("x", "bf16", ("M", h)), ("cos", "bf16", ("M", rot)),
                    ("sin", "bf16", ("M", rot))],
                   [("y", "bf16", ("M", h))],
                   [f"%y = fusion.rope %x, %cos, %sin {{{attrs}}} : {ty(('M', h))}, "
                    f"{ty(('M', rot))} -> {ty(('M', h))}"],
                   params={"head_dim": head, "rotary_dim": rot, "interleaved": pairs})


def q_rope(kind, h, positions=None):
    """A query projection and its rotary embedding ([M, h] bf16, tables
    [M, R] bf16 per token, or [positions, R] per position: token m's row
    m mod positions); the fused library folds the rope into the GEMM
    (fusion-compile's default)."""
    head, rot, pairs, norm, bias = {"llama_q_rope": (128, 128, False, True, False),
                                    "neox_q_rope": (128, 32, False, False, True),
                                    "gptj_q_rope": (256, 64, True, False, False)}[kind]
    rows = positions or "M"
    x, w, t = ty(("M", h)), ty((h, h)), ty((rows, rot))
    args = [("x", "bf16", ("M", h))]
    body = []
    src = "%x"
    if norm:
        args.append(("g", "bf16", (h,)))
        body.append(f"%n = fusion.rms_norm %x weight(%g : {ty((h,))}) {{epsilon = {LLAMA_EPS:e} : f32}}"
                    f" : {x} -> {x}")
        src = "%n"
    args.append(("w", "bf16", (h, h)))
    bias_arg = ""
    if bias:
        args.append(("b", "bf16", (h,)))
        bias_arg = f" bias(%b : {ty((h,))})"
    args += [("cos", "bf16", (rows, rot)), ("sin", "bf16", (rows, rot))]
    attrs = f"head_dim = {head} : i64" + (", interleaved" if pairs else "")
    body += [f"%q = fusion.matmul {src}, %w{bias_arg} {{transpose_rhs}} : {x}, {w} -> {x}",
             f"%y = fusion.rope %q, %cos, %sin {{{attrs}}} : {x}, {t} -> {x}"]
    name = f"{kind}_pos{positions}_h{h}" if positions else f"{kind}_h{h}"
    prog = program(name, kind, h, args, [("y", "bf16", ("M", h))], body,
                   eps=LLAMA_EPS if norm else None,
                   params={"head_dim": head, "rotary_dim": rot, "interleaved": pairs})
    return prog


def programs():
    out = []
    out += [p for h in TRAIN_H
            for p in (linear_wgrad(h), train_step(h, "rms"), train_step(h, "ln"))]
    # Rows one CTA holds (H = 256: the regrouped grad epilogue without a
    # cluster) and residual blocks (the grad epilogue's residual).
    out += [train_step(256, "rms"), train_step(256, "ln")]
    # A weight gradient of 33 row blocks and a last column block of 64 of
    # 256: planned as CTA pairs (cluster_m = 2), the last pair's second CTA
    # lies past M.
    out += [linear_wgrad(4160)]
    # A row and a K that do not fill whole tiles (the regrouped row dot's
    # K tail of A, y and its vectors, its last column tile of 232).
    out += [train_step(1000, "rms"), train_step(1000, "ln")]
    out += [train_step(h, norm, skip=True) for h in TRAIN_RES_H for norm in ("rms", "ln")]
    for h in LAYER_H:
        out += [llama_prenorm(h), llama_prenorm(h, mul_weight=True), qwen3_q_norm(h), bert_postnorm(h),
                bert_postnorm(h, add_bias=True), ln_prenorm(h), rms_norm(h, stats=False),
                layer_norm(h, stats=False), linear_residual(h), linear_residual(h, bias=True),
                neox_parallel(h), olmo2_post(h), llama_mlp(h), gpt2_mlp(h)]
    out += [olmo2_post(256), gate_up(1024)]
    for h in ROW_H:
        out += [rms_norm(h), layer_norm(h), rms_norm_grad(h), layer_norm_grad(h)] + [elementwise(k, h)
                                               for k in ("add_rowbias", "add", "mul_col")]
    out += [rope(k, h) for k in ("rope", "rope_neox") for h in (1024, 4096)]
    out += [rope("rope_gptj", h) for h in (1024, 4096)]
    out += [q_rope(k, h) for k in ("llama_q_rope", "neox_q_rope", "gptj_q_rope")
            for h in (1024, 4096)]
    # Tables per position, [2048, 128], shared by the sequences (HF's cos,
    # sin of [1, L, D]): the GEMM epilogue's and the row kernel's m mod T.
    out += [q_rope("llama_q_rope", 1024, positions=2048)]
    out += [p for h in RES_H for p in (rms_norm_grad_res(h), layer_norm_grad_res(h))]
    out += [p for h in NARROW_GRAD_H for p in (rms_norm_grad(h), layer_norm_grad(h))]
    out += [layer_norm_grad_res(h, "f32") for h in RES32_H]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--print", metavar="NAME", help="print one program's MLIR instead")
    a = p.parse_args()
    progs = programs()
    if a.print:
        found = [q for q in progs if q["name"] == a.print]
        if not found:
            p.error(f"--print: no program '{a.print}'; there are {', '.join(q['name'] for q in progs)}")
        print(found[0]["mlir"], end="")
        return
    os.makedirs(a.outdir, exist_ok=True)
    for q in progs:
        # The unfused library's copy has its own function name: both
        # libraries load into one process, and their symbols and kernel names
        # stay apart (bench_fused_matmul.kernel_ms finds kernels by name).
        for suffix in ("", "_unfused") + (("_lazyln",) if q["kind"] in LAZY_LN_KINDS else ()):
            with open(os.path.join(a.outdir, q["name"] + suffix + ".mlir"), "w") as f:
                f.write(q["mlir"].replace(f"@{q['name']}(", f"@{q['name']}{suffix}(", 1))
        # The fused library's extra fusion-compile options (build_layers.sh).
        if q.get("flags"):
            with open(os.path.join(a.outdir, q["name"] + ".flags"), "w") as f:
                f.write(" ".join(q["flags"]) + "\n")
    manifest = [{k: v for k, v in q.items() if k != "mlir"} for q in progs]
    with open(os.path.join(a.outdir, "layers.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"gen_layers: {len(progs)} programs in {a.outdir}")


if __name__ == "__main__":
    main()
