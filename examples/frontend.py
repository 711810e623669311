#!/usr/bin/env python3
"""A Hugging Face Llama pre-norm (LlamaRMSNorm with its weight, then q_proj),
a BERT post-norm (BertSelfOutput: dense with bias, residual, LayerNorm), a
Qwen3 decoder layer's attention inputs (input_layernorm, q/k/v projections,
the per-head q_norm and k_norm) and a FlashNormAttention block (LayerNorm
over the heads, HSTU's attention, the residuals, RMSNorm) through the Python
front end: captured, fused, compiled and run, on the GPU where one is
present (sm_90a), else on the CPU (the reference lowering).

    .venv/bin/python examples/frontend.py      # after scripts/quickstart.sh or test.sh

Prints what was fused and how, each decision at the model's source line, and
the largest difference from PyTorch's own output."""
import os
import sys

import torch
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertSelfOutput
from transformers.models.llama.modeling_llama import LlamaRMSNorm
try:
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm
except ImportError:  # transformers before 4.51: the same arithmetic
    Qwen3RMSNorm = LlamaRMSNorm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import fusion_compiler  # noqa: E402


class LlamaPreNorm(torch.nn.Module):
    def __init__(self, hidden=1024):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(hidden, eps=1e-5)
        self.q_proj = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x):
        return self.q_proj(self.input_layernorm(x))


class Qwen3AttentionInputs(torch.nn.Module):
    """Qwen3Attention's inputs before RoPE, as its code computes them: the
    layer's input RMSNorm, then q, k, v (fewer key/value heads), each query
    and key head normalized over its own dimension. Fused: the input norm
    rides in all three GEMMs (Lazy Pre-Norm), q_norm and k_norm in the q and
    k GEMMs' epilogues over groups of head_dim columns."""

    def __init__(self, hidden=512, heads=8, kv_heads=2, head_dim=64):
        super().__init__()
        self.head_dim = head_dim
        self.input_layernorm = Qwen3RMSNorm(hidden, eps=1e-6)
        self.q_proj = torch.nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.q_norm = Qwen3RMSNorm(head_dim, eps=1e-6)
        self.k_norm = Qwen3RMSNorm(head_dim, eps=1e-6)

    def forward(self, x):
        h = self.input_layernorm(x)
        shape = (*x.shape[:-1], -1, self.head_dim)
        q = self.q_norm(self.q_proj(h).view(shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(h).view(shape)).transpose(1, 2)
        v = self.v_proj(h).view(shape).transpose(1, 2)
        return torch.cat((q, k, v), dim=1)


class NormAttentionBlock(torch.nn.Module):
    """LayerNorm(q) over all heads -> HSTU's attention act(q k^T / sqrt(d)) v
    (no softmax, short keys) -> + LayerNorm(q) -> RMSNorm -> + q: one
    fusion.norm_attention kernel."""

    def __init__(self, heads=2, dim=128):
        super().__init__()
        self.ln = torch.nn.LayerNorm(heads * dim)
        self.rms = torch.nn.RMSNorm(heads * dim)

    def forward(self, q, k, v):
        b, l, h, d = q.shape
        ln = self.ln(q.reshape(b, l, h * d)).reshape(b, l, h, d)
        s = torch.einsum("bihd,bjhd->bhij", ln, k) * d ** -0.5
        a = torch.einsum("bhij,bjhd->bihd", torch.nn.functional.gelu(s, approximate="tanh"), v)
        return self.rms((a + ln).reshape(b, l, h * d)).reshape(b, l, h, d) + q


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    target = "sm_90a" if device == "cuda" else "cpu"
    torch.manual_seed(0)
    bert = BertSelfOutput(BertConfig(hidden_size=1024))
    for name, model, shapes in (("Llama pre-norm", LlamaPreNorm(), [(2, 128, 1024)]),
                                ("BERT post-norm", bert, [(2, 128, 1024)] * 2),
                                ("Qwen3 attention inputs", Qwen3AttentionInputs(),
                                 [(2, 128, 512)]),
                                ("FlashNormAttention block", NormAttentionBlock(),
                                 [(4, 256, 2, 128), (4, 128, 2, 128), (4, 128, 2, 128)])):
        model = model.to(device=device, dtype=torch.bfloat16).eval()
        inputs = tuple(torch.randn(*shape, device=device, dtype=torch.bfloat16)
                       for shape in shapes)
        compiled = fusion_compiler.compile(model, inputs, target=target)
        print(f"== {name} ({target})")
        print(compiled.explain())
        with torch.no_grad():
            diff = (compiled(*inputs).float() - model(*inputs).float()).abs().max().item()
        print(f"largest difference from PyTorch: {diff:.4g}")


if __name__ == "__main__":
    main()
