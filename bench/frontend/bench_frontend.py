#!/usr/bin/env python3
"""The front end on the GPU: PyTorch modules as their users write them,
compiled by fusion_compiler for sm_90a, checked against float64 and timed
as the user sees them (the whole module call) against eager PyTorch and
torch.compile of the same module, in one run (docs/PERF.md's protocol:
bench/layers/bench_util.run_rounds).

The GPU machine has no MLIR, so the libraries are built here first, ahead of
time, into a cache that travels with the tools' files (the compiler's
identity):

    python3 bench/frontend/bench_frontend.py --prepare build/frontend-gpu   # here
    # on the GPU machine, with build/frontend-gpu carried:
    python3 bench/frontend/bench_frontend.py --dir build/frontend-gpu --json OUT.json

There, `fusion_compiler.compile(..., strict=True)` finds every library in the
cache (a miss would need the compiler and fails the case). The modules are
Hugging Face's where `transformers` imports, else copies of their forward
code (LlamaRMSNorm, LlamaMLP, BertSelfOutput: the same arithmetic).
"""
import argparse
import copy
import json
import os
import re
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

M = 65536          # tokens: 16 sequences of 4096
CHECK_M = 4099     # tokens of the correctness check: not a tile multiple

try:
    from transformers.models.llama.modeling_llama import (LlamaDecoderLayer, LlamaRMSNorm,
                                                          LlamaRotaryEmbedding, LlamaMLP)
    from transformers.models.bert.modeling_bert import BertSelfOutput
    from transformers import BertConfig, LlamaConfig
    SOURCE = "transformers"
except ImportError:
    SOURCE = "copies of transformers' forward code"

    class LlamaRMSNorm(torch.nn.Module):
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(hidden_size))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            input_dtype = hidden_states.dtype
            hidden_states = hidden_states.to(torch.float32)
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states.to(input_dtype)

    class LlamaMLP(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            h, i = config.hidden_size, config.intermediate_size
            self.gate_proj = torch.nn.Linear(h, i, bias=False)
            self.up_proj = torch.nn.Linear(h, i, bias=False)
            self.down_proj = torch.nn.Linear(i, h, bias=False)
            self.act_fn = torch.nn.SiLU()

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    class BertSelfOutput(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = torch.nn.Linear(config.hidden_size, config.hidden_size)
            self.LayerNorm = torch.nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.dropout = torch.nn.Dropout(config.hidden_dropout_prob)

        def forward(self, hidden_states, input_tensor):
            hidden_states = self.dense(hidden_states)
            hidden_states = self.dropout(hidden_states)
            return self.LayerNorm(hidden_states + input_tensor)

    class _Config:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    def LlamaConfig(**kw):
        return _Config(**kw)

    def BertConfig(**kw):
        kw.setdefault("layer_norm_eps", 1e-12)
        kw.setdefault("hidden_dropout_prob", 0.1)
        return _Config(**kw)


class Olmo2RMSNorm(torch.nn.Module):
    """OLMo 2's RMSNorm as transformers writes it (the norm in float32,
    times the weight, rounded once; modeling_olmo2.py)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


class Olmo2PostAttention(torch.nn.Module):
    """OLMo 2's attention output as its decoder layer writes it: o_proj,
    then post_attention_layernorm, added to the residual stream
    (`residual + self.post_attention_layernorm(self.self_attn(...))`); Gemma
    2 / 3 write the same with their norm's (1 + w). The front end makes it
    one partition: a GEMM with the norm epilogue and an add kernel, or with
    FUSION_COMPILE_FLAGS=--post-residual one GEMM whose norm epilogue adds
    the stream (post_residual)."""

    def __init__(self, hidden):
        super().__init__()
        self.o_proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.post_attention_layernorm = Olmo2RMSNorm(hidden)

    def forward(self, attn, residual):
        return residual + self.post_attention_layernorm(self.o_proj(attn))


class DecoderLayer(torch.nn.Module):
    """A LlamaDecoderLayer with its rotary embedding, as a model calls it
    (causal attention through SDPA); or another family's layer, rotary
    embedding and config (`family`); transformers only."""

    def __init__(self, h=None, i=None, heads=None, kv_heads=None, family=None):
        super().__init__()
        if family is None:
            cfg = LlamaConfig(hidden_size=h, intermediate_size=i, num_attention_heads=heads,
                              num_key_value_heads=kv_heads, head_dim=h // heads,
                              rms_norm_eps=1e-5)
            layer, rope = LlamaDecoderLayer, LlamaRotaryEmbedding
        else:
            layer, rope, cfg = family
        cfg._attn_implementation = "sdpa"
        self.layer = layer(cfg, 0)
        self.rope = rope(cfg)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        out = self.layer(x, position_embeddings=self.rope(x, pos), attention_mask=None,
                         position_ids=pos)
        return out[0] if isinstance(out, tuple) else out


class PreNorm(torch.nn.Module):
    """Llama's pre-norm: input_layernorm (LlamaRMSNorm, with its weight), q_proj."""

    def __init__(self, h):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(h, eps=1e-5)
        self.q_proj = torch.nn.Linear(h, h, bias=False)

    def forward(self, x):
        return self.q_proj(self.input_layernorm(x))


class QkNorm(torch.nn.Module):
    """Qwen3's query path before RoPE: q_proj, the heads unfolded, the
    per-head RMSNorm over D (Qwen3RMSNorm is LlamaRMSNorm's arithmetic),
    heads first. The front end compiles the linear and the norm as one
    partition (expand_shape to [?, H, D], the norm, collapse_shape back to
    [?, H * D]), which fusion-fuse makes one GEMM with the norm in its
    epilogue over groups of D columns (norm_group_size); the heads view and
    the transpose after it stay in PyTorch (docs/design.md)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.dim = heads, hidden // heads
        self.q_proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.q_norm = LlamaRMSNorm(self.dim, eps=1e-6)

    def gemm_alone(self, x):
        """The fused form's bound: q_proj alone (cuBLAS)."""
        return self.q_proj(x)

    def forward(self, x):
        shape = (*x.shape[:-1], self.heads, self.dim)
        return self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)


class Qwen3AttentionInputs(torch.nn.Module):
    """A Qwen3 decoder layer's attention inputs before RoPE, as its code
    writes them: input_layernorm (Qwen3RMSNorm), q_proj / k_proj / v_proj
    (grouped-query: fewer k and v heads), q_norm and k_norm over each head's
    D, heads first. fusion-fuse makes it three GEMMs: the input norm as
    their Lazy Pre-Norm prologue, q and k with their per-head norm in the
    epilogue (norm_group_size)."""

    def __init__(self, hidden, heads, kv_heads, dim=128):
        super().__init__()
        self.dim = dim
        self.input_layernorm = LlamaRMSNorm(hidden, eps=1e-6)
        self.q_proj = torch.nn.Linear(hidden, heads * dim, bias=False)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * dim, bias=False)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * dim, bias=False)
        self.q_norm = LlamaRMSNorm(dim, eps=1e-6)
        self.k_norm = LlamaRMSNorm(dim, eps=1e-6)

    def forward(self, x):
        h = self.input_layernorm(x)
        shape = (*x.shape[:-1], -1, self.dim)
        q = self.q_norm(self.q_proj(h).view(shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(h).view(shape)).transpose(1, 2)
        v = self.v_proj(h).view(shape).transpose(1, 2)
        return q, k, v


class NormAttentionBlock(torch.nn.Module):
    """The seed's Kunlun PFFN block (issue 17) as its users write it:
    LayerNorm of q over all heads of a token, HSTU's attention (gelu_tanh,
    no softmax, short keys), the residual, RMSNorm over all heads, the
    residual of q. The front end makes it one partition, which fusion-fuse
    forms into fusion.norm_attention (the FlashNormAttention kernel)."""

    def __init__(self, heads, dim, eps=1e-5):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.ln = torch.nn.LayerNorm(heads * dim, eps=eps)
        self.rms = torch.nn.RMSNorm(heads * dim, eps=eps)

    def forward(self, q, k, v):
        b, l = q.shape[0], q.shape[1]
        ln = self.ln(q.reshape(b, l, self.heads * self.dim)).reshape(q.shape)
        s = torch.einsum("bihd,bjhd->bhij", ln, k) * self.dim ** -0.5
        a = torch.einsum("bhij,bjhe->bihe", torch.nn.functional.gelu(s, approximate="tanh"), v)
        y = self.rms((a + ln).reshape(b, l, self.heads * self.dim))
        return y.reshape(q.shape) + q


class HstuAttention(torch.nn.Module):
    """HSTU's attention (generative recommenders) as its reference code
    writes it, without softmax: silu(q k^T / sqrt(d)) v over [B, L, H, D],
    short keys. The front end makes it one fusion.gdpa (its own kernel)."""

    def __init__(self, heads, dim):
        super().__init__()
        self.scale = dim ** -0.5

    def forward(self, q, k, v):
        s = torch.einsum("bihd,bjhd->bhij", q, k) * self.scale
        return torch.einsum("bhij,bjhd->bihd", torch.nn.functional.silu(s), v)


# The attention block's shapes (static: its partition is compiled per
# shape): the seed's Kunlun sizes for the benchmark, odd ones for the check.
ATTENTION_SHAPES = {"bench": dict(batch=768, kv=128), "check": dict(batch=7, kv=128)}


def cases():
    out = []
    for heads, lq in ((2, 512), (4, 1024)):
        out.append((f"norm_attention_kunlun_h{heads}_lq{lq}",
                    lambda heads=heads: NormAttentionBlock(heads, 128), (heads, 128, lq), 3))
        out.append((f"gdpa_hstu_h{heads}_lq{lq}",
                    lambda heads=heads: HstuAttention(heads, 128), (heads, 128, lq), 3))
    for h in (1024, 2048, 4096):
        out.append((f"llama_prenorm_h{h}", lambda h=h: PreNorm(h), h, 1))
    for h in (768, 1024):
        out.append((f"bert_self_output_h{h}",
                    lambda h=h: BertSelfOutput(BertConfig(hidden_size=h)), h, 2))
    for h in (2048, 4096):
        out.append((f"qwen3_q_norm_h{h}", lambda h=h: QkNorm(h, h // 128), h, 1))
    # OLMo 2 1B's and 7B's hidden sizes.
    for h in (2048, 4096):
        out.append((f"olmo2_post_attention_h{h}", lambda h=h: Olmo2PostAttention(h), h, 2))
    # Qwen3-1.7B's and Qwen3-8B's shapes (hidden 2048: 16 q and 8 kv heads;
    # 4096: 32 and 8; heads of 128).
    for h, heads, kv in ((2048, 16, 8), (4096, 32, 8)):
        out.append((f"qwen3_attention_inputs_h{h}",
                    lambda h=h, heads=heads, kv=kv: Qwen3AttentionInputs(h, heads, kv), h, 1))
    # Heads of 256 (Gemma 3 4B's shapes: hidden 2560, 8 query and 4 key/value
    # heads), one head per 256-column tile.
    out.append(("qwen3_attention_inputs_h2560_d256",
                lambda: Qwen3AttentionInputs(2560, 8, 4, dim=256), 2560, 1))
    # The gated MLP (one GEMM over gate and up since session 47): TinyLlama's
    # and Llama 2 7B's shapes.
    for h, i in ((2048, 5632), (4096, 11008)):
        out.append((f"llama_mlp_h{h}_i{i}",
                    lambda h=h, i=i: LlamaMLP(LlamaConfig(hidden_size=h, intermediate_size=i,
                                                          hidden_act="silu", mlp_bias=False)),
                    h, 1))
    if SOURCE == "transformers":
        out.append(("llama_decoder_layer_h2048", lambda: DecoderLayer(2048, 5632, 32, 4),
                    2048, 1))
        # Fused qkv projections with rotary embeddings: Pythia-1.4B's
        # GPT-NeoX layer (heads of 128 side by side in query_key_value, a
        # rope on 32 of each, LayerNorms, a parallel residual) and
        # Phi-3-mini's (qkv_proj's q, k and v rows, heads of 96).
        from transformers import GPTNeoXConfig
        from transformers.models.gpt_neox.modeling_gpt_neox import (GPTNeoXLayer,
                                                                    GPTNeoXRotaryEmbedding)
        from transformers.models.phi3.modeling_phi3 import (Phi3Config, Phi3DecoderLayer,
                                                            Phi3RotaryEmbedding)
        neox = lambda: GPTNeoXConfig(hidden_size=2048, num_attention_heads=16,
                                     intermediate_size=8192, rotary_pct=0.25,
                                     use_parallel_residual=True, hidden_dropout=0.0,
                                     attention_dropout=0.0)
        out.append(("neox_decoder_layer_h2048",
                    lambda: DecoderLayer(family=(GPTNeoXLayer, GPTNeoXRotaryEmbedding, neox())),
                    2048, 1))
        phi3 = lambda: Phi3Config(hidden_size=3072, intermediate_size=8192,
                                  num_attention_heads=32, num_key_value_heads=32,
                                  rms_norm_eps=1e-5)
        out.append(("phi3_decoder_layer_h3072",
                    lambda: DecoderLayer(family=(Phi3DecoderLayer, Phi3RotaryEmbedding, phi3())),
                    3072, 1))
        # GPT-J 6B's layer: separate projections, heads of 256 with a rope on
        # 64 of each in pairs (rotate_every_two), a parallel MLP. Only where
        # transformers has GPTJRotaryEmbedding (5.x; older versions compute
        # the angles inside the attention, which DecoderLayer cannot feed).
        from transformers import GPTJConfig
        from transformers.models.gptj import modeling_gptj
        if hasattr(modeling_gptj, "GPTJRotaryEmbedding"):
            gptj = lambda: GPTJConfig(n_embd=4096, n_head=16, rotary_dim=64, n_inner=16384,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
            out.append(("gptj_decoder_layer_h4096",
                        lambda: DecoderLayer(family=(modeling_gptj.GPTJBlock,
                                                     modeling_gptj.GPTJRotaryEmbedding, gptj())),
                        4096, 1))
        # Phi-3-mini's MLP (hidden 3072, gate_up_proj of 2 x 8192 rows: the
        # front end cuts the weight into its halves, one gated GEMM) and
        # GPT-2 medium's (gelu_new in c_fc's epilogue).
        from transformers.models.phi3.modeling_phi3 import Phi3Config, Phi3MLP
        from transformers.models.gpt2.modeling_gpt2 import GPT2Config, GPT2MLP
        out.append(("phi3_mlp_h3072_i8192",
                    lambda: Phi3MLP(Phi3Config(hidden_size=3072, intermediate_size=8192)),
                    3072, 1))
        out.append(("gpt2_mlp_h1024",
                    lambda: GPT2MLP(4096, GPT2Config(n_embd=1024, resid_pdrop=0.0)), 1024, 1))
    return out


def through_backend(fc, m, **options):
    """torch.compile of `m` with fusion_compiler's backend (Inductor for the
    rest), compiled static, in a frame of its own (apart from the plain
    torch.compile of the same module)."""
    return torch.compile(lambda *a: m(*a), dynamic=False,
                         backend=lambda gm, inps: fc.backend(gm, inps, **options))


def make(factory, device):
    torch.manual_seed(0)
    m = factory().to(device=device, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)  # norm weights and biases away from 1 and 0
            else:
                p.normal_(0, p.shape[1] ** -0.5)
    return m


def inputs(h, count, tokens, device, seed, kind="check"):
    """The inputs of a case: `count` activations [1, tokens, h]; for an
    attention block (h = (heads, dim, lq)) q [B, lq, heads, dim] and k, v
    [B, kv, heads, dim] at the ATTENTION_SHAPES of `kind`, lq odd for the
    check."""
    g = torch.Generator(device=device).manual_seed(seed)
    if isinstance(h, tuple):
        heads, dim, lq = h
        shape = ATTENTION_SHAPES[kind]
        lq = lq if kind == "bench" else lq - 211
        q = torch.randn(shape["batch"], lq, heads, dim, device=device, generator=g)
        kv = [torch.randn(shape["batch"], shape["kv"], heads, dim, device=device, generator=g)
              for _ in range(2)]
        return tuple(t.bfloat16() for t in [q, *kv])
    return tuple(torch.randn(1, tokens, h, device=device, generator=g).bfloat16()
                 for _ in range(count))


def prepare(directory, only=None):
    import fusion_compiler as fc
    tools = fc.find_tools()
    bindir = os.path.join(directory, "bin")
    libdir = os.path.join(directory, "lib")
    os.makedirs(bindir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    shutil.copy(tools.fusion_opt, bindir)
    shutil.copy(tools.fusion_compile, bindir)
    shutil.copy(tools.runtime_library, libdir)
    os.environ["FUSION_TOOLS_DIR"] = bindir
    os.environ["FUSION_CACHE_DIR"] = os.path.join(directory, "cache")
    for name, factory, h, count in cases():
        if only and not re.search(only, name):
            continue
        m = make(factory, "cpu")
        # Token-count cases: one library serves every count; an attention
        # block's partition is static: built for the check's and the
        # benchmark's shapes.
        kinds = ("check", "bench") if isinstance(h, tuple) else ("check",)
        for kind in kinds:
            x = inputs(h, count, 8, "cpu", 0, kind)
            report = fc.build(m, x, target="sm_90a")
            if not isinstance(h, tuple):  # the weights' folds kept between calls
                fc.build(m, x, target="sm_90a", cache_weight_folds=True)
            print(f"{name} ({kind}): {len(report.partitions)} partition(s)")
            print(report)
            # The fusion decisions, recorded here (the GPU machine cannot run fusion-opt).
            print(fc.explain(m, x, target="sm_90a"))
            # The libraries of the torch.compile backend's partitions (its graphs
            # come through Inductor's decompositions).
            # Token-count partitions take any count; an attention block's
            # (its einsums kept whole, dynamo_forms) is static.
            if kind == "check" or isinstance(h, tuple):
                torch._dynamo.reset()
                with torch.no_grad():
                    through_backend(fc, m, target="sm_90a", load=False)(*x)


def check(fc, m, h, count, cache_weight_folds=False):
    """(our error, PyTorch's bf16 error) against float64, largest absolute,
    and how many library calls our forward made. With `cache_weight_folds`,
    the weights' folds kept between calls: the check also updates a norm
    weight in place and checks the next call against the updated module."""
    from fusion_compiler.calls import CompiledPartition
    x = inputs(h, count, CHECK_M, "cuda", 1, "check")
    compiled = fc.compile(m, x, target="sm_90a", strict=True, report=False,
                          gradients=False, cache_weight_folds=cache_weight_folds)

    def error(got, want):  # the largest over a module's outputs (q, k, v)
        if isinstance(want, tuple):
            return max(error(g, w) for g, w in zip(got, want))
        return (got.double() - want).abs().max().item()
    before = CompiledPartition.calls
    with torch.no_grad():
        ours = compiled(*x)
        calls = CompiledPartition.calls - before
        theirs = m(*x)
        exact = copy.deepcopy(m).double()(*(t.double() for t in x))
        errors = [error(ours, exact)]
        if cache_weight_folds:
            m = copy.deepcopy(m)  # the caller's module stays as it was
            compiled = fc.compile(m, x, target="sm_90a", strict=True, report=False,
                                  gradients=False, cache_weight_folds=True)
            compiled(*x)
            for p in m.parameters():
                if p.dim() == 1:
                    p.mul_(1.25)  # in place: the next call must prepare again
            errors.append(error(compiled(*x), copy.deepcopy(m).double()(
                *(t.double() for t in x))))
    torch.cuda.synchronize()
    return max(errors), error(theirs, exact), calls


def graph_replay(fn):
    """fn captured in a CUDA graph (after two calls on a side stream, as
    PyTorch's capture recipe has it); returns the graph's replay. A decode
    server (vLLM, torch.compile's mode="reduce-overhead") replays its
    decode steps this way, so that the host's time per call drops out."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def run(args):
    import fusion_compiler as fc
    from bench_util import bench_ms, compile_fresh, run_rounds, write_json, markdown_table
    os.environ["FUSION_TOOLS_DIR"] = os.path.join(args.dir, "bin")
    os.environ["FUSION_CACHE_DIR"] = os.path.join(args.dir, "cache")
    rows = []
    for name, factory, h, count in cases():
        if args.only and not re.search(args.only, name):
            continue
        row = dict(case=name, tokens=args.tokens, h=h, modules=SOURCE)
        if isinstance(h, tuple):
            row.update(tokens=ATTENTION_SHAPES["bench"]["batch"] * h[2],
                       h=h[0] * h[1], heads=h[0], lq=h[2], kv=ATTENTION_SHAPES["bench"]["kv"])
        rows.append(row)
        errors = row.setdefault("errors", {})
        try:
            m = make(factory, "cuda")
            ours_err, torch_err, calls = check(fc, m, h, count)
            row.update(err_ours=ours_err, err_torch_bf16=torch_err, library_calls=calls,
                       correct=ours_err <= 2 * torch_err + 2 ** -7)
            tokenwise = not isinstance(h, tuple)
            if tokenwise:
                cached_err = check(fc, m, h, count, cache_weight_folds=True)[0]
                row.update(err_ours_cached=cached_err,
                           correct=row["correct"] and cached_err <= 2 * torch_err + 2 ** -7)
            x = inputs(h, count, args.tokens, "cuda", 2, "bench")
            compiled = fc.compile(m, x, target="sm_90a", strict=True, report=False,
                                  gradients=False)
            cached = fc.compile(m, x, target="sm_90a", strict=True, report=False,
                                gradients=False, cache_weight_folds=True) if tokenwise else None
            row["partitions"] = [[op for op, _ in p.ops] for p in compiled.explain().partitions]
            inductor = compile_fresh(m)
            backend = through_backend(fc, m)
            from fusion_compiler.calls import CompiledPartition
            with torch.no_grad():
                inductor(*x)
                compiled(*x)
                before = CompiledPartition.calls
                backend(*x)
                row["backend_library_calls"] = CompiledPartition.calls - before
                measurements = [
                    ("eager_ms", bench_ms, lambda: m(*x)),
                    ("inductor_ms", bench_ms, lambda: inductor(*x)),
                    ("ours_ms", bench_ms, lambda: compiled(*x)),
                    ("ours_backend_ms", bench_ms, lambda: backend(*x)),
                ]
                if cached is not None:  # the weights' folds kept between calls
                    cached(*x)
                    measurements.append(("ours_cached_ms", bench_ms, lambda: cached(*x)))
                if hasattr(m, "gemm_alone"):  # the fused form's bound: its GEMM alone (cuBLAS)
                    measurements.append(("gemm_alone_ms", bench_ms, lambda: m.gemm_alone(*x)))
                # Decode-sized calls, as a server replays them: our call (the
                # folds kept) and torch.compile's in CUDA graphs.
                # With frozen_weights the graph reads the kept folds instead
                # of replaying their preparation (inference, as Inductor's
                # freezing).
                if cached is not None and args.tokens <= args.graph_tokens:
                    frozen = fc.compile(m, x, target="sm_90a", strict=True, report=False,
                                        gradients=False, cache_weight_folds=True,
                                        frozen_weights=True)
                    for key, fn in (("inductor_graph_ms", lambda: inductor(*x)),
                                    ("ours_cached_graph_ms", lambda: cached(*x)),
                                    ("ours_frozen_graph_ms", lambda: frozen(*x))):
                        try:
                            measurements.append((key, bench_ms, graph_replay(fn)))
                        except Exception as e:  # recorded; the other measurements run
                            errors[key] = f"{type(e).__name__}: {e}"[:300]
                mean, spread, rounds = run_rounds(args.rounds, measurements, errors)
            row.update(mean)
            row["spread_ms"] = spread
            for key in ("ours_ms", "ours_backend_ms", "ours_cached_ms"):
                if key in mean:
                    row[f"vs_inductor_{key[:-3]}"] = mean.get("inductor_ms", float("nan")) / mean[key]
            if "ours_cached_graph_ms" in mean:
                row["vs_inductor_graph"] = (mean.get("inductor_graph_ms", float("nan")) /
                                            mean["ours_cached_graph_ms"])
            if "ours_frozen_graph_ms" in mean:
                row["vs_inductor_frozen_graph"] = (mean.get("inductor_graph_ms", float("nan")) /
                                                   mean["ours_frozen_graph_ms"])
            if "ours_ms" in mean:
                row["vs_eager"] = mean.get("eager_ms", float("nan")) / mean["ours_ms"]
        except Exception as e:  # recorded, the next case runs
            import traceback
            traceback.print_exc()
            errors["case"] = f"{type(e).__name__}: {e}"[:600]
        print(json.dumps(row), flush=True)
        if args.json:
            write_json(args.json, args, rows, dict(rounds=args.rounds, protocol="run_rounds"),
                       False)
    if args.json:
        write_json(args.json, args, rows, dict(rounds=args.rounds, protocol="run_rounds"), True)
    print(markdown_table([("case", "case", None), ("ours err", "err_ours", "{:.3g}"),
                          ("bf16 err", "err_torch_bf16", "{:.3g}"),
                          ("eager ms", "eager_ms", "{:.3f}"),
                          ("torch.compile ms", "inductor_ms", "{:.3f}"),
                          ("ours ms", "ours_ms", "{:.3f}"),
                          ("ours + Inductor ms", "ours_backend_ms", "{:.3f}"),
                          ("ours, folds kept ms", "ours_cached_ms", "{:.3f}"),
                          ("ours vs torch.compile", "vs_inductor_ours", "{:.2f}x"),
                          ("ours + Inductor vs torch.compile", "vs_inductor_ours_backend",
                           "{:.2f}x"),
                          ("folds kept vs torch.compile", "vs_inductor_ours_cached", "{:.2f}x"),
                          ("CUDA graphs: torch.compile ms", "inductor_graph_ms", "{:.3f}"),
                          ("CUDA graphs: ours, folds kept ms", "ours_cached_graph_ms", "{:.3f}"),
                          ("CUDA graphs: ours, frozen weights ms", "ours_frozen_graph_ms", "{:.3f}"),
                          ("CUDA graphs: ours vs torch.compile", "vs_inductor_graph", "{:.2f}x"),
                          ("CUDA graphs: frozen vs torch.compile", "vs_inductor_frozen_graph",
                           "{:.2f}x"),
                          ("ours vs eager", "vs_eager", "{:.2f}x")], rows))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prepare", metavar="DIR", help="build the libraries into DIR (no GPU)")
    p.add_argument("--dir", default="build/frontend-gpu", help="the prepared DIR")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tokens", type=int, default=M,
                   help="tokens of a benchmark call (default %(default)s; 1-64: decode-sized)")
    p.add_argument("--graph-tokens", type=int, default=64,
                   help="at most this many tokens a call: also time torch.compile's call and "
                        "ours (folds kept) replayed as CUDA graphs (default %(default)s)")
    p.add_argument("--only", help="run the cases whose name matches this regex")
    p.add_argument("--commit", default=os.environ.get("FUSION_COMMIT", "unknown"))
    args = p.parse_args()
    if args.prepare:
        prepare(args.prepare, args.only)
    else:
        run(args)


if __name__ == "__main__":
    main()
