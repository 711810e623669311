"""Training through fusion_compiler.compile on the H200: each partition's call
that needs gradients runs its sm_90a training forward and backward programs
(python/fusion_compiler/emit_grad.py), and every leaf's gradient (input,
weights, biases) is compared with float64 autograd of the same module: the
relative error (Frobenius) at most 2x PyTorch's own bf16 autograd + 1e-3.
Every output of our libraries is poisoned with NaN before the kernels run,
so an element a kernel does not write shows. Llama's pre-norm (LlamaRMSNorm's
arithmetic with its weight, then nn.Linear without bias; T5LayerNorm's, whose
float32 rstd multiplies x itself, and GemmaRMSNorm's, whose float32 weight
1 + w multiplies in float32, likewise; a LayerNorm of x cast to float32 and
back, diffusers' FP32LayerNorm, then a linear; CohereLayerNorm written out,
then a linear), BERT's post-norm
(nn.Linear with bias, the residual, nn.LayerNorm), nn.Linear with bias;
hidden 1024, at 65536 tokens ([64, 1024, H]) and at 7 ([1, 7, H]); the
pre-norm with an input that needs no gradient (the backward without dx); and
the FlashNormAttention block as PyTorch (nn.LayerNorm over the heads, HSTU's
einsum attention with gelu_tanh, the residuals, nn.RMSNorm; 2 heads of 128,
128 keys), whose training forward is the FlashNormAttention kernel saving
ln_q and h for the backward's kernels, at B 768 x L_q 512 and B 3 x L_q 77;
HSTU's attention alone (einsum, SiLU, no softmax) with 200 keys of
heads of 64 and with heads of 256 (64 keys), at two token counts each; and
Qwen3's q_proj / k_proj with their per-head q_norm / k_norm (8 query and 2
key heads of 128, heads first), whose training forward is the GEMM with the
norm over column groups in its epilogue, saving its input and rstd; and OLMo
2's attention output (o_proj, its RMSNorm, the residual stream added after
it: the norm epilogue's post_residual).
The CPU twin: python/test/test_frontend_training.py.

The GPU machine has no MLIR: build the libraries here first (no GPU needed),
into a directory that carries them with the tools' files (the compiler's
identity), then run the tests there on it:

    FUSION_TOOLS_DIR=build/bin python3 test/gpu/test_frontend_training_gpu.py \\
        --prepare build/frontend-training-gpu                       # here
    FUSION_FRONTEND_TRAINING_DIR=build/frontend-training-gpu \\
        python3 -m pytest -v -s test/gpu/test_frontend_training_gpu.py   # on the H200

On a machine with both the compiler and a GPU, the second line alone does
(without the directory, the tools come from $FUSION_TOOLS_DIR).
"""
import copy
import os
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))

import torch  # noqa: E402

H = 1024
SHAPES = {"65536": (64, 1024, H), "7": (1, 7, H)}
FLOOR = 1e-3
DIR_ENV = "FUSION_FRONTEND_TRAINING_DIR"


# Hugging Face's LlamaRMSNorm (or, without transformers, a copy of its
# forward code) and the block as PyTorch users write it (nn.LayerNorm over the
# heads, HSTU's einsum attention, the residuals, nn.RMSNorm): bench_frontend's,
# also its forward benchmark's modules.
sys.path.insert(0, os.path.join(REPO, "bench", "frontend"))
from bench_frontend import (HstuAttention, LlamaRMSNorm, NormAttentionBlock,  # noqa: E402
                            Olmo2PostAttention)


class PreNorm(torch.nn.Module):
    """A pre-norm as decoder layers write it: the norm `norm(H)` with its
    weight, then nn.Linear without bias."""

    def __init__(self, norm):
        super().__init__()
        self.input_layernorm = norm(H)
        self.q_proj = torch.nn.Linear(H, H, bias=False)

    def forward(self, x):
        return self.q_proj(self.input_layernorm(x))


class T5LayerNorm(torch.nn.Module):
    """Hugging Face's T5LayerNorm, its forward code as it is: the statistics
    in float32, rstd times x itself (promoted), rounded to the weight's type."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class GemmaRMSNorm(torch.nn.Module):
    """Hugging Face's GemmaRMSNorm, its forward code as it is: the norm in
    float32, times 1 + weight in float32, rounded once (type_as)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Float32LayerNorm(torch.nn.LayerNorm):
    """diffusers' FP32LayerNorm: the LayerNorm of x in float32 with float32
    copies of its weight and bias, cast back."""

    def forward(self, x):
        y = torch.nn.functional.layer_norm(x.float(), self.normalized_shape,
                                           self.weight.float(), self.bias.float(), self.eps)
        return y.to(x.dtype)


class CohereLayerNorm(torch.nn.Module):
    """Hugging Face's CohereLayerNorm, its forward code as it is: a LayerNorm
    written out in float32, a weight, no bias, cast back."""

    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


class BertPostNorm(torch.nn.Module):
    """BertSelfOutput in eval mode: dense with its bias, the residual, LayerNorm."""

    def __init__(self, h=H):
        super().__init__()
        self.dense = torch.nn.Linear(h, h)
        self.LayerNorm = torch.nn.LayerNorm(h, eps=1e-12)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dense(hidden_states) + input_tensor)


class LinearNormLinear(torch.nn.Module):
    """Issue 16's training step as a module: fc1 -> LlamaRMSNorm (its
    weight) -> fc2, no biases. Its training forward moves the norm's weight
    into fc2 and saves x_hat alone (emit_grad.foldable_norms)."""

    def __init__(self, h=H):
        super().__init__()
        self.fc1 = torch.nn.Linear(h, h, bias=False)
        self.norm = LlamaRMSNorm(h, eps=1e-5)
        self.fc2 = torch.nn.Linear(h, h, bias=False)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)))


CASES = {"llama_prenorm": (lambda: PreNorm(lambda h: LlamaRMSNorm(h, eps=1e-5)), 1),
         "linear_norm_linear": (LinearNormLinear, 1),
         "t5_prenorm": (lambda: PreNorm(T5LayerNorm), 1),
         "gemma_prenorm": (lambda: PreNorm(GemmaRMSNorm), 1),
         "fp32_layernorm": (lambda: PreNorm(Float32LayerNorm), 1),
         "cohere_prenorm": (lambda: PreNorm(CohereLayerNorm), 1),
         "bert_postnorm": (BertPostNorm, 2), "linear_bias": (lambda: torch.nn.Linear(H, H), 1),
         # OLMo 2's attention output, residual + RMSNorm(o_proj(a)): the
         # training forward's norm epilogue saves the norm's input (and, with
         # FUSION_COMPILE_FLAGS=--post-residual, adds the stream).
         "olmo2_post": (lambda: Olmo2PostAttention(H), 2)}


# The block's (B, L_q); keys and values [B, 128, 2, 128].
BLOCK_SHAPES = {"768x512": (768, 512), "3x77": (3, 77)}
BLOCK_KV = 128


def make_block(device):
    torch.manual_seed(0)
    m = NormAttentionBlock(2, 128)
    with torch.no_grad():
        for p in m.parameters():
            p.uniform_(0.5, 1.5)
    return m.to(device).bfloat16()


def make_block_inputs(batch, lq, device, seed=1):
    g = torch.Generator(device=device).manual_seed(seed)
    heads, dim = 2, 128
    q = torch.randn(batch, lq, heads, dim, generator=g, device=device)
    k = 0.25 * torch.randn(batch, BLOCK_KV, heads, dim, generator=g, device=device)
    v = torch.randn(batch, BLOCK_KV, heads, dim, generator=g, device=device)
    return tuple(t.bfloat16() for t in (q, k, v))


# HSTU's attention (bench_frontend's HstuAttention: einsum scores scaled by
# 1 / sqrt(D), SiLU, no softmax): (B, L_q, H, D, L_kv): keys past 128 (the backward's two
# passes of keys) and heads of 256 (the forward holds 64 keys of them; the
# backward's role groups), each also at a few odd tokens.
HSTU_SHAPES = {"kv200_d64": (64, 300, 2, 64, 200), "kv200_d64_3x77": (3, 77, 2, 64, 200),
               "d256": (8, 129, 2, 256, 64), "d256_3x77": (3, 77, 2, 256, 64)}


def make_hstu(shape, device):
    _, _, heads, dim, _ = HSTU_SHAPES[shape]
    return HstuAttention(heads, dim).to(device)


def make_hstu_inputs(shape, device, seed=1):
    batch, lq, heads, dim, lkv = HSTU_SHAPES[shape]
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(batch, lq, heads, dim, generator=g, device=device)
    k = 0.25 * torch.randn(batch, lkv, heads, dim, generator=g, device=device)
    v = torch.randn(batch, lkv, heads, dim, generator=g, device=device)
    return tuple(t.bfloat16() for t in (q, k, v))


class QwenQkNorm(torch.nn.Module):
    """Qwen3's query and key paths before RoPE: q_proj and k_proj (fewer
    key heads), each head normalized over its 128 by Qwen3RMSNorm (LlamaRMSNorm's
    arithmetic), heads first, q and k concatenated along the heads."""

    def __init__(self, heads=8, kv_heads=2, dim=128):
        super().__init__()
        self.dim = dim
        self.q_proj = torch.nn.Linear(H, heads * dim, bias=False)
        self.k_proj = torch.nn.Linear(H, kv_heads * dim, bias=False)
        self.q_norm = LlamaRMSNorm(dim, eps=1e-6)
        self.k_norm = LlamaRMSNorm(dim, eps=1e-6)

    def forward(self, x):
        shape = (*x.shape[:-1], -1, self.dim)
        q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(shape)).transpose(1, 2)
        return torch.cat((q, k), dim=1)


def randomized(factory, device):
    """factory()'s module, bf16 on `device`, its norm parameters away from 1
    and 0 (so that a dropped weight or bias shows)."""
    torch.manual_seed(0)
    m = factory()
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    return m.to(device).bfloat16()


def make_qk_norm(device):
    return randomized(QwenQkNorm, device)


def make(name, device):
    """The module of case `name` (`randomized`)."""
    return randomized(CASES[name][0], device)


def make_inputs(name, shape, device, seed=1):
    g = torch.Generator(device=device).manual_seed(seed)
    return tuple(torch.randn(shape, generator=g, device=device).bfloat16()
                 for _ in range(CASES[name][1]))


def prepare(directory, only=None):
    """Builds every case's sm_90a libraries (forward, training forward,
    backward) into `directory`/cache, beside copies of the tools' files
    (`only`: the cases whose label matches this regex)."""
    import re

    import fusion_compiler as fc
    tools = fc.find_tools()
    bindir, libdir = os.path.join(directory, "bin"), os.path.join(directory, "lib")
    os.makedirs(bindir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    shutil.copy(tools.fusion_opt, bindir)
    shutil.copy(tools.fusion_compile, bindir)
    if tools.runtime_library:
        shutil.copy(tools.runtime_library, libdir)
    os.environ["FUSION_TOOLS_DIR"] = bindir
    os.environ["FUSION_CACHE_DIR"] = os.path.join(directory, "cache")
    def build(label, module, inputs):
        if only and not re.search(only, label):
            return
        report = fc.build(module, inputs, target="sm_90a", gradients=True)
        for p in report.partitions:
            if p.gradients != "kernels":
                raise SystemExit(f"{label}: {p.name}: no backward on the kernels: "
                                 f"{p.gradients_why}")
        print(f"{label}:\n{report}")
    for name in CASES:
        # One library serves every token count: build with a small example.
        build(name, make(name, "cpu"), make_inputs(name, SHAPES["7"], "cpu"))
    for shape, (batch, lq) in BLOCK_SHAPES.items():
        build(f"block {shape}", make_block("cpu"), make_block_inputs(batch, lq, "cpu"))
    for shape in HSTU_SHAPES:
        build(f"hstu {shape}", make_hstu(shape, "cpu"), make_hstu_inputs(shape, "cpu"))
    build("qwen3 qk_norm", make_qk_norm("cpu"),
          (torch.randn(SHAPES["7"]).bfloat16(),))


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", metavar="DIR", required=True,
                        help="build the libraries into DIR (no GPU needed)")
    parser.add_argument("--only", help="the cases whose label matches this regex")
    args = parser.parse_args()
    prepare(args.prepare, args.only)
    sys.exit(0)

import pytest  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the sm_90a libraries run only on the H200",
                allow_module_level=True)

if os.environ.get(DIR_ENV):
    os.environ["FUSION_TOOLS_DIR"] = os.path.join(os.environ[DIR_ENV], "bin")
    os.environ["FUSION_CACHE_DIR"] = os.path.join(os.environ[DIR_ENV], "cache")

import fusion_compiler as fc  # noqa: E402
from fusion_compiler import calls  # noqa: E402
from fusion_compiler.calls import CompiledPartition  # noqa: E402


@pytest.fixture
def poisoned():
    """Every output our libraries write starts as NaN."""
    def allocate(shape, dtype, device):
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    plain, calls._allocate = calls._allocate, allocate
    yield
    calls._allocate = plain


def gradients(module, inputs, dys, call=None, needs_input=True):
    """The output and the gradient of every leaf (the inputs, where
    `needs_input`, then the parameters) for output gradient `dys`."""
    module.zero_grad(set_to_none=True)
    xs = [t.detach().clone().requires_grad_(needs_input) for t in inputs]
    out = (call or module)(*xs)
    out.backward(dys.to(out.dtype))
    leaves = (xs if needs_input else []) + list(module.parameters())
    return out, [t.grad for t in leaves]


def relative(a, want):
    return ((a.double() - want).norm() / want.norm()).item()


def check(name, shape, needs_input=True):
    m = make(name, "cuda")
    check_module(name, m, make_inputs(name, shape, "cuda"), (*shape[:-1], H), needs_input)


def check_module(name, m, x, dy_shape, needs_input=True):
    compiled = fc.compile(m, x, target="sm_90a", strict=True, report=False)
    report = compiled.explain()
    for p in report.partitions:
        assert p.gradients == "kernels", f"{p.name}: {p.gradients_why}"
    g = torch.Generator(device="cuda").manual_seed(2)
    dy = torch.randn(*dy_shape, generator=g, device="cuda", dtype=torch.float64)
    shape = x[0].shape
    exact = copy.deepcopy(m).double()
    want_y, want = gradients(exact, [t.double() for t in x], dy, needs_input=needs_input)
    theirs_y, theirs = gradients(m, x, dy, needs_input=needs_input)
    before = CompiledPartition.calls
    y, ours = gradients(m, x, dy, call=compiled, needs_input=needs_input)
    torch.cuda.synchronize()
    assert CompiledPartition.calls - before == 2 * len(report.partitions)
    assert not torch.isnan(y).any(), f"{int(torch.isnan(y).sum())} outputs not written"
    errors = [("output", relative(y, want_y), relative(theirs_y, want_y))]
    names = ([f"input {i}" for i in range(len(x))] if needs_input else []) + \
        [n for n, _ in m.named_parameters()]
    for leaf, o, t, w in zip(names, ours, theirs, want):
        assert o is not None, f"{leaf}: no gradient"
        assert not torch.isnan(o).any(), f"{leaf}: {int(torch.isnan(o).sum())} NaN"
        errors.append((leaf, relative(o, w), relative(t, w)))
    for leaf, e_ours, e_torch in errors:
        print(f"{name} {list(shape)} {leaf}: rel err ours {e_ours:.3e}, torch bf16 {e_torch:.3e}")
    for leaf, e_ours, e_torch in errors:
        assert e_ours <= 2 * e_torch + FLOOR, f"{leaf}: ours {e_ours}, PyTorch {e_torch}"


@pytest.mark.parametrize("tokens", list(SHAPES))
@pytest.mark.parametrize("name", list(CASES))
def test_gradients(name, tokens, poisoned):
    check(name, SHAPES[tokens])


def test_input_without_gradient(poisoned):
    # The first layer's input needs no gradient: no dx GEMM (the backward for
    # that set of inputs, or, where the machine cannot compile it, the one
    # for every input with dx dropped).
    check("llama_prenorm", SHAPES["65536"], needs_input=False)


@pytest.mark.parametrize("shape", list(BLOCK_SHAPES))
def test_norm_attention_block(shape, poisoned):
    # Its training forward is one FlashNormAttention kernel that also writes
    # ln_q and h for the backward's rms_norm_grad, gdpa_grad and
    # layer_norm_grad kernels.
    batch, lq = BLOCK_SHAPES[shape]
    x = make_block_inputs(batch, lq, "cuda")
    check_module("norm_attention_block", make_block("cuda"), x, x[0].shape)


@pytest.mark.parametrize("shape", list(HSTU_SHAPES))
def test_hstu_attention(shape, poisoned):
    # gdpa forward and gdpa_grad from HSTU's einsum attention as written.
    x = make_hstu_inputs(shape, "cuda")
    check_module(f"hstu_{shape}", make_hstu(shape, "cuda"), x, x[0].shape)


@pytest.mark.parametrize("tokens", list(SHAPES))
def test_qwen3_qk_norm(tokens, poisoned):
    """Qwen3's per-head q_norm / k_norm after their projections, trained:
    one partition, its training forward the GEMMs with the norm over each
    head's 128 columns in the epilogue (norm_group_size), the backward's
    rms_norm_grad over [tokens, heads, 128] and the projections' GEMMs."""
    m = make_qk_norm("cuda")
    b, l, _ = SHAPES[tokens]
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(SHAPES[tokens], generator=g, device="cuda").bfloat16(),)
    check_module("qwen3_qk_norm", m, x, (b, 10, l, 128))
