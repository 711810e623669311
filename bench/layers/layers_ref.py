"""What the layer programs of gen_layers.py compute, written as a PyTorch user
writes them (nn.Modules), and the helpers the layer tests and benchmarks share:
fresh inputs, NaN-poisoned outputs, float64 and bf16 references, the error
check, and loading the compiled libraries.

The reference is the module itself: in float64 (parameters and inputs
converted) it is the reference; in bf16 it is PyTorch's own bf16 path, whose
error against float64 sets the tolerance (docs/PERF.md: ours <= 2x theirs +
a 1e-3 floor; saved statistics within 1e-3).
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from layers_manifest import artifacts_dir, library_path, load_manifest, variant_suffix  # noqa: F401 (re-exported)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
FLOOR = 1e-3      # absolute floor of the relative-error bound
STAT_TOL = 1e-3   # saved mean / rstd, relative to the row's scale


# --------------------------------------------------------------------------
# The layers as nn.Modules
# --------------------------------------------------------------------------

def _compute_dtype(t):
    """HF's `.float()`, but float64 stays float64 (the reference)."""
    return torch.promote_types(t.dtype, torch.float32)


class LlamaPreNorm(nn.Module):
    """q_proj(input_layernorm(x)) with torch's nn.RMSNorm (weight inside the norm)."""

    def __init__(self, h, eps, **kw):
        super().__init__()
        self.norm = nn.RMSNorm(h, eps=eps, **kw)
        self.proj = nn.Linear(h, h, bias=False, **kw)

    def forward(self, x):
        return self.proj(self.norm(x))


class HFLlamaRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm: normalize in f32, round, then weight * x."""

    def __init__(self, h, eps, **kw):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h, **kw))
        self.eps = eps

    def forward(self, x):
        t = x.to(_compute_dtype(x))
        t = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * t.to(x.dtype)


class LlamaPreNormMulWeight(nn.Module):
    def __init__(self, h, eps, **kw):
        super().__init__()
        self.norm = HFLlamaRMSNorm(h, eps, **kw)
        self.proj = nn.Linear(h, h, bias=False, **kw)

    def forward(self, x):
        return self.proj(self.norm(x))


class BertPostNorm(nn.Module):
    """BertSelfOutput without dropout: LayerNorm(dense(x) + residual)."""

    def __init__(self, h, eps, add_bias=False, **kw):
        super().__init__()
        self.dense = nn.Linear(h, h, bias=not add_bias, **kw)
        self.bias = nn.Parameter(torch.zeros(h, **kw)) if add_bias else None
        self.norm = nn.LayerNorm(h, eps=eps, **kw)

    def forward(self, x, r):
        t = self.dense(x)
        if self.bias is not None:
            t = t + self.bias
        return self.norm(t + r)


class LNPreNorm(nn.Module):
    """A pre-LN projection: nn.Linear (with bias) of nn.LayerNorm (weight,
    bias)."""

    def __init__(self, h, eps, **kw):
        super().__init__()
        self.norm = nn.LayerNorm(h, eps=eps, **kw)
        self.proj = nn.Linear(h, h, bias=True, **kw)

    def forward(self, x):
        return self.proj(self.norm(x))


class LinearResidual(nn.Module):
    """The residual stream after a projection: r + proj(x) (Llama's o_proj,
    no bias; GPT-2's c_proj, with its bias)."""

    def __init__(self, h, eps=None, bias=False, **kw):
        super().__init__()
        self.proj = nn.Linear(h, h, bias=bias, **kw)

    def forward(self, x, r):
        return r + self.proj(x)


class ParallelResidual(nn.Module):
    """GPT-NeoX's parallel residual as HF writes it: mlp_output + attn_output
    + hidden_states, the attention's dense and the MLP's dense_4h_to_h (both
    with their biases) given their inputs a [M, H] and m [M, 4H]."""

    def __init__(self, h, eps=None, **kw):
        super().__init__()
        self.attn_dense = nn.Linear(h, h, **kw)
        self.mlp_dense = nn.Linear(4 * h, h, **kw)

    def forward(self, a, m, x):
        return self.mlp_dense(m) + self.attn_dense(a) + x


class SandwichPostNorm(nn.Module):
    """OLMo 2's attention output: r + RMSNorm(o_proj(x)), the norm after
    the projection (Olmo2RMSNorm's arithmetic: f32, times the weight, rounded
    once, as nn.RMSNorm), its output added to the residual stream."""

    def __init__(self, h, eps, **kw):
        super().__init__()
        self.proj = nn.Linear(h, h, bias=False, **kw)
        self.norm = nn.RMSNorm(h, eps=eps, **kw)

    def forward(self, x, r):
        return r + self.norm(self.proj(x))


class LlamaMLPBlock(nn.Module):
    """post_attention_layernorm (nn.RMSNorm with its weight) then HF's
    LlamaMLP: down_proj(silu(gate_proj(n)) * up_proj(n)), no biases."""

    def __init__(self, h, eps, inter, **kw):
        super().__init__()
        self.norm = nn.RMSNorm(h, eps=eps, **kw)
        self.gate_proj = nn.Linear(h, inter, bias=False, **kw)
        self.up_proj = nn.Linear(h, inter, bias=False, **kw)
        self.down_proj = nn.Linear(inter, h, bias=False, **kw)

    def forward(self, x):
        n = self.norm(x)
        return self.down_proj(F.silu(self.gate_proj(n)) * self.up_proj(n))


class GateUp(nn.Module):
    """LlamaMLP's gated product alone: silu(gate_proj(x)) * up_proj(x)."""

    def __init__(self, h, eps=None, inter=None, **kw):
        super().__init__()
        self.gate_proj = nn.Linear(h, inter, bias=False, **kw)
        self.up_proj = nn.Linear(h, inter, bias=False, **kw)

    def forward(self, x):
        return F.silu(self.gate_proj(x)) * self.up_proj(x)


class GPT2MLP(nn.Module):
    """GPT-2's MLP: c_proj(gelu_new(c_fc(x))), gelu_new the tanh form."""

    def __init__(self, h, eps=None, **kw):
        super().__init__()
        self.c_fc = nn.Linear(h, 4 * h, **kw)
        self.c_proj = nn.Linear(4 * h, h, **kw)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class RowBias(nn.Module):
    def __init__(self, h, **kw):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(h, **kw))

    def forward(self, x):
        return x + self.bias


class Add(nn.Module):
    def forward(self, x, r):
        return x + r


class MulCol(nn.Module):
    def forward(self, x, c):
        return (x * c).to(x.dtype)  # bf16 * f32 promotes: round back like the program


class Rope(nn.Module):
    """Rotary position embedding as Hugging Face writes it, on the [M, H]
    output of a projection: per head of `head_dim`, the first `rotary_dim`
    columns become x cos + rotate_half(x) sin (GPT-J's rotate_every_two
    with `interleaved`), the rest pass through; cos and sin [M, rotary_dim]
    per token, or [T, rotary_dim] per position (token m's row m mod T)."""

    def __init__(self, head_dim, rotary_dim, interleaved, **kw):
        super().__init__()
        self.head_dim, self.rotary_dim, self.interleaved = head_dim, rotary_dim, interleaved

    def forward(self, x, cos, sin):
        if x.dim() == 2 and cos.shape[0] != x.shape[0]:
            # Per-position tables [T, R] of the tokens flattened: token m's
            # row is m mod T.
            at = torch.arange(x.shape[0], device=x.device) % cos.shape[0]
            cos, sin = cos[at], sin[at]
        q = x.view(*x.shape[:-1], -1, self.head_dim)
        rot, rest = q[..., :self.rotary_dim], q[..., self.rotary_dim:]
        if self.interleaved:
            turned = torch.stack((-rot[..., 1::2], rot[..., ::2]), dim=-1).flatten(-2)
        else:
            half = self.rotary_dim // 2
            turned = torch.cat((-rot[..., half:], rot[..., :half]), dim=-1)
        c, s = cos.unsqueeze(-2), sin.unsqueeze(-2)  # over the heads
        return torch.cat((rot * c + turned * s, rest), dim=-1).flatten(-2)


class QProjRope(nn.Module):
    """A query projection, then its rotary embedding (Rope): Llama's
    (nn.RMSNorm with weight first, no bias), GPT-NeoX's (bias, partial
    rotary) or GPT-J's (interleaved pairs)."""

    def __init__(self, h, eps, head_dim, rotary_dim, interleaved, norm=False, bias=False, **kw):
        super().__init__()
        self.norm = nn.RMSNorm(h, eps=eps, **kw) if norm else nn.Identity()
        self.proj = nn.Linear(h, h, bias=bias, **kw)
        self.rope = Rope(head_dim, rotary_dim, interleaved)

    def forward(self, x, cos, sin):
        return self.rope(self.proj(self.norm(x)), cos, sin)


class Qwen3QNorm(nn.Module):
    """Qwen3's q_proj then q_norm (Qwen3RMSNorm, HF LlamaRMSNorm's arithmetic)
    over each head of `head_dim`, flattened back to [M, H] (the heads view
    and its transpose are free in the model)."""

    def __init__(self, h, eps, head_dim=128, **kw):
        super().__init__()
        self.head_dim = head_dim
        self.q_proj = nn.Linear(h, h, bias=False, **kw)
        self.q_norm = HFLlamaRMSNorm(head_dim, eps, **kw)

    def forward(self, x):
        q = self.q_proj(x)
        return self.q_norm(q.view(*q.shape[:-1], -1, self.head_dim)).flatten(-2)


# kind -> (module factory(h, eps, **kw), {input name: parameter path}, activation inputs)
MODULES = {
    "llama_prenorm": (LlamaPreNorm, {"g": "norm.weight", "w": "proj.weight"}, ("x",)),
    "llama_prenorm_mulweight": (LlamaPreNormMulWeight, {"g": "norm.weight", "w": "proj.weight"},
                                ("x",)),
    "qwen3_q_norm": (Qwen3QNorm, {"g": "q_norm.weight", "w": "q_proj.weight"}, ("x",)),
    "bert_postnorm": (BertPostNorm, {"w": "dense.weight", "b": "dense.bias",
                                     "gamma": "norm.weight", "beta": "norm.bias"}, ("x", "r")),
    "bert_postnorm_addbias": (lambda h, eps, **kw: BertPostNorm(h, eps, add_bias=True, **kw),
                              {"w": "dense.weight", "b": "bias", "gamma": "norm.weight",
                               "beta": "norm.bias"}, ("x", "r")),
    "ln_prenorm": (LNPreNorm, {"gamma": "norm.weight", "beta": "norm.bias",
                               "w": "proj.weight", "b": "proj.bias"}, ("x",)),
    "llama_o_proj": (LinearResidual, {"w": "proj.weight"}, ("x", "r")),
    "gpt2_c_proj": (lambda h, eps, **kw: LinearResidual(h, bias=True, **kw),
                    {"w": "proj.weight", "b": "proj.bias"}, ("x", "r")),
    "neox_parallel": (ParallelResidual, {"wa": "attn_dense.weight", "ba": "attn_dense.bias",
                                         "wm": "mlp_dense.weight", "bm": "mlp_dense.bias"},
                      ("a", "m", "x")),
    "olmo2_post": (SandwichPostNorm, {"w": "proj.weight", "g": "norm.weight"}, ("x", "r")),
    "llama_mlp": (LlamaMLPBlock, {"g": "norm.weight", "wg": "gate_proj.weight",
                                  "wu": "up_proj.weight", "wd": "down_proj.weight"}, ("x",)),
    "gate_up": (GateUp, {"wg": "gate_proj.weight", "wu": "up_proj.weight"}, ("x",)),
    "gpt2_mlp": (GPT2MLP, {"w1": "c_fc.weight", "b1": "c_fc.bias", "w2": "c_proj.weight",
                           "b2": "c_proj.bias"}, ("x",)),
    "rms_norm": (lambda h, eps, **kw: nn.RMSNorm(h, eps=eps, **kw), {"g": "weight"}, ("x",)),
    "layer_norm": (lambda h, eps, **kw: nn.LayerNorm(h, eps=eps, **kw),
                   {"gamma": "weight", "beta": "bias"}, ("x",)),
    "add_rowbias": (lambda h, eps, **kw: RowBias(h, **kw), {"b": "bias"}, ("x",)),
    "add": (lambda h, eps, **kw: Add(), {}, ("x", "r")),
    "mul_col": (lambda h, eps, **kw: MulCol(), {}, ("x", "c")),
    "rope": (lambda h, eps, **kw: Rope(**kw), {}, ("x", "cos", "sin")),
    "rope_neox": (lambda h, eps, **kw: Rope(**kw), {}, ("x", "cos", "sin")),
    "rope_gptj": (lambda h, eps, **kw: Rope(**kw), {}, ("x", "cos", "sin")),
    "llama_q_rope": (lambda h, eps, **kw: QProjRope(h, eps, norm=True, **kw),
                     {"g": "norm.weight", "w": "proj.weight"}, ("x", "cos", "sin")),
    "neox_q_rope": (lambda h, eps, **kw: QProjRope(h, eps, bias=True, **kw),
                    {"w": "proj.weight", "b": "proj.bias"}, ("x", "cos", "sin")),
    "gptj_q_rope": (lambda h, eps, **kw: QProjRope(h, eps, **kw),
                    {"w": "proj.weight"}, ("x", "cos", "sin")),
}


class TrainBlock(nn.Module):
    """The training-step programs (train_step_rms_h{H}, train_step_ln_h{H}):
    Linear (no bias) -> RMSNorm (weight) or LayerNorm (weight, bias) ->
    Linear, as a PyTorch user writes them."""

    def __init__(self, h, eps, dtype, norm="rms", device="cuda", skip=False):
        super().__init__()
        self.fc1 = nn.Linear(h, h, bias=False, device=device, dtype=dtype)
        kind = nn.RMSNorm if norm == "rms" else nn.LayerNorm
        self.norm = kind(h, eps=eps, device=device, dtype=dtype)
        self.fc2 = nn.Linear(h, h, bias=False, device=device, dtype=dtype)
        self.skip = skip

    def forward(self, x):
        h = self.fc1(x)
        y = self.fc2(self.norm(h))
        # train_step_res_*: a residual block around the norm and fc2.
        return y + h if self.skip else y


def train_norm(prog):
    """"rms" or "ln": the norm of a training-step program."""
    return "ln" if prog["kind"] in ("train_step_ln", "train_step_res_ln") else "rms"


def train_skip(prog):
    """Whether a training-step program is a residual block (train_step_res_*)."""
    return prog["kind"].startswith("train_step_res_")


def make_train_case(h, m, seed, norm="rms", device="cuda"):
    """A training step's inputs in call order: x, W1, the norm's weight (g;
    or gamma, beta), W2, dy."""
    gen = torch.Generator(device=device).manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen, device=device)  # noqa: E731
    case = {"x": rnd(m, h).bfloat16(), "w1": (rnd(h, h) * h ** -0.5).bfloat16()}
    if norm == "rms":
        case["g"] = (1.0 + 0.5 * rnd(h)).bfloat16()
    else:
        case["gamma"], case["beta"] = (1.0 + 0.5 * rnd(h)).bfloat16(), (0.5 * rnd(h)).bfloat16()
    case.update(w2=(rnd(h, h) * h ** -0.5).bfloat16(), dy=rnd(m, h).bfloat16())
    return case


def make_train_block(inputs, h, eps, dtype, norm="rms", skip=False):
    """The module with the case's weights, in dtype, on the inputs' device."""
    block = TrainBlock(h, eps, dtype, norm, device=inputs["x"].device, skip=skip)
    with torch.no_grad():
        block.fc1.weight.copy_(inputs["w1"])
        block.norm.weight.copy_(inputs["g" if norm == "rms" else "gamma"])
        if norm == "ln":
            block.norm.bias.copy_(inputs["beta"])
        block.fc2.weight.copy_(inputs["w2"])
    return block


def train_reference(inputs, h, eps, dtype, norm="rms", skip=False):
    """The training-step program's outputs computed by autograd of the module
    in dtype: (y, dx, dW1, dg, dW2), with LayerNorm (y, dx, dW1, dgamma,
    dbeta, dW2); skip: the residual block (train_step_res_*)."""
    block = make_train_block(inputs, h, eps, dtype, norm, skip)
    x = inputs["x"].to(dtype).requires_grad_()
    y = block(x)
    y.backward(inputs["dy"].to(dtype))
    params = (block.norm.weight.grad,) + ((block.norm.bias.grad,) if norm == "ln" else ())
    return (y.detach(), x.grad, block.fc1.weight.grad) + params + (block.fc2.weight.grad,)


def norm_grad_reference(prog, inputs, dtype):
    """A norm-gradient program's outputs (rms_norm_grad*: dx, dg;
    layer_norm_grad*: dx, dgamma, dbeta) by PyTorch's autograd of the norm in
    dtype, from the inputs dy, x and the weight (g or gamma; autograd
    recomputes the statistics, which the program reads as saved by the
    forward). The _res programs add the residual branch's gradient dr to dx
    (in dtype: PyTorch's own bf16 path adds in bf16)."""
    h, eps = prog["h"], prog["eps"]
    layer = prog["kind"].startswith("layer_norm_grad")
    x = inputs["x"].to(dtype).requires_grad_()
    w = inputs["gamma" if layer else "g"].to(dtype).requires_grad_()
    dy = inputs["dy"].to(dtype)
    with torch.enable_grad():
        if layer:
            b = torch.zeros(h, dtype=dtype, device=x.device, requires_grad=True)
            out = torch.autograd.grad(F.layer_norm(x, (h,), w, b, eps), (x, w, b), dy)
        else:
            out = torch.autograd.grad(F.rms_norm(x, (h,), w, eps), (x, w), dy)
    if "dr" in inputs:
        out = (out[0] + inputs["dr"].to(dtype),) + tuple(out[1:])
    return out


def build_module(prog, x, dtype=torch.bfloat16):
    """The program as the nn.Module a user writes, its parameters taken from
    the input dict x, in dtype, without gradients. Returns (module, the
    activation inputs as a tuple: as given, or all in float64 for float64)."""
    factory, params, acts = MODULES[prog["kind"]]
    module = factory(prog["h"], prog["eps"], **prog.get("params", {}), device=x["x"].device,
                     dtype=dtype)
    with torch.no_grad():
        for name, path in params.items():
            module.get_parameter(path).copy_(x[name])
    module.requires_grad_(False).eval()
    args = tuple(x[a].double() if dtype == torch.float64 else x[a] for a in acts)
    return module, args


# --------------------------------------------------------------------------
# Inputs, outputs, references, checks
# --------------------------------------------------------------------------

def shape_of(spec, m):
    return tuple(m if d == "M" else d for d in spec["shape"])


def make_inputs(prog, m, gen, device="cuda", offset=0.0):
    """Fresh random inputs in call order: activations normal (x shifted by
    `offset`), nn.Linear-like weights (uniform, bound 1/sqrt(in)), norm
    weights around 1, norm biases and row scales of moderate size. Biases
    (the Linear's and the row bias) are uniform in [-1, 1), as trained ones
    can be, not at nn.Linear's init scale: at H = 4096 a bias of bound 1/64
    that a kernel dropped would stay within the error bound."""
    h = prog["h"]
    out = {}
    for spec in prog["inputs"]:
        shape, name = shape_of(spec, m), spec["name"]
        normal = lambda: torch.randn(shape, generator=gen, device=device)
        uniform = lambda bound: (torch.rand(shape, generator=gen, device=device) * 2 - 1) * bound
        if name == "x":
            t = normal() + offset
        elif name in ("w", "wa", "wm", "wg", "wu", "wd", "w1", "w2"):
            # nn.Linear's [out, in]: bound 1/sqrt(in)
            t = uniform(shape[-1] ** -0.5)
        elif name in ("b", "ba", "bm", "b1", "b2"):
            t = uniform(1.0)
        elif name in ("g", "gamma"):
            t = 1.0 + 0.5 * normal()
        elif name == "beta":
            t = 0.5 * normal()
        elif name == "c":
            t = torch.rand(shape, generator=gen, device=device) + 0.5
        else:  # residual
            t = normal()
        out[name] = t.to(DTYPES[spec["dtype"]])
    return out


def make_outputs(prog, m, device="cuda"):
    """Outputs in call order, poisoned with NaN (an unwritten element fails)."""
    return {s["name"]: torch.full(shape_of(s, m), float("nan"), dtype=DTYPES[s["dtype"]],
                                  device=device) for s in prog["outputs"]}


@torch.no_grad()
def reference(prog, x, dtype):
    """The program's outputs computed by its nn.Module in dtype (float64: the
    reference, with the statistics; bf16: PyTorch's own bf16 path)."""
    module, args = build_module(prog, x, dtype)
    out = {"y": module(*args)}
    if dtype == torch.float64 and prog["kind"] in ("rms_norm", "layer_norm"):
        t = x["x"].double()
        if prog["kind"] == "layer_norm":
            out["mean"] = t.mean(-1)
            t = t - out["mean"][:, None]
        out["rstd"] = torch.rsqrt(t.pow(2).mean(-1) + prog["eps"])
    return out


def rel_error(got, ref):
    got, ref = got.double(), ref.double()
    return ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def check(prog, x, y, ref64=None, ref16=None):
    """Compares the outputs y with the references; returns a dict of errors
    and 'ok' (and 'why' when not). NaN left in any output fails."""
    ref64 = ref64 or reference(prog, x, torch.float64)
    ref16 = ref16 or reference(prog, x, torch.bfloat16)
    res = dict(rel_err=rel_error(y["y"], ref64["y"]),
               torch_bf16_rel_err=rel_error(ref16["y"], ref64["y"]))
    why = []
    for name, t in y.items():
        if torch.isnan(t).any():
            why.append(f"{name}: {int(torch.isnan(t).sum())} elements not written (NaN)")
    if not res["rel_err"] <= 2 * res["torch_bf16_rel_err"] + FLOOR:
        why.append(f"y: rel err {res['rel_err']:.3e} > 2 x torch bf16 "
                   f"{res['torch_bf16_rel_err']:.3e} + {FLOOR:g}")
    # Statistics relative to the row's scale: rstd relative to itself, the
    # mean in units of the row's standard deviation 1/rstd.
    for stat in ("mean", "rstd"):
        if stat in y:
            diff = (y[stat].double() - ref64[stat]).abs()
            scale = ref64["rstd"] if stat == "mean" else 1.0 / ref64["rstd"].abs()
            res[f"{stat}_err"] = err = torch.nan_to_num((diff * scale).max(), nan=float("inf")).item()
            if not err <= STAT_TOL:
                why.append(f"{stat}: max error {err:.3e} > {STAT_TOL:g}")
    res["ok"] = not why
    if why:
        res["why"] = "; ".join(why)
    return res


# --------------------------------------------------------------------------
# Artifacts
# --------------------------------------------------------------------------

class Libraries:
    """Loads ARTIFACTS/layers/lib<name>.so (fused), lib<name>_unfused.so and
    lib<name>_lazyln.so once each, with the runtime copied into ARTIFACTS."""

    def __init__(self, artifacts):
        import fusion_runtime as fr  # runtime/python on sys.path (the callers put it there)
        self.fr, self.artifacts = fr, artifacts
        runtime = os.path.join(artifacts, "libfusion_runtime.so")
        # Without the copy: $FUSION_RUNTIME_LIBRARY, the search path, or the library's own.
        self.runtime = fr.Runtime.find(runtime if os.path.exists(runtime) else None)
        self.loaded = {}

    def path(self, name, variant):
        return library_path(self.artifacts, name, variant)

    def function(self, prog, variant):
        """The compiled function, or None when its library was not built
        (bench/build_gpu_artifacts.sh prints why)."""
        path = self.path(prog["name"], variant)
        if not os.path.exists(path):
            return None
        if path not in self.loaded:
            self.loaded[path] = self.fr.Library(path, runtime=self.runtime)
        name = prog["name"] + variant_suffix(variant)
        return self.loaded[path].function(name, prog["signature"])
