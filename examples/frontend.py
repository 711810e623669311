#!/usr/bin/env python3
"""A Hugging Face Llama pre-norm (LlamaRMSNorm with its weight, then q_proj)
and a BERT post-norm (BertSelfOutput: dense with bias, residual, LayerNorm)
through the Python front end: captured, fused, compiled and run, on the GPU
where one is present (sm_90a), else on the CPU (the reference lowering).

    .venv/bin/python examples/frontend.py      # after scripts/quickstart.sh or test.sh

Prints what was fused and how, each decision at the model's source line, and
the largest difference from PyTorch's own output."""
import os
import sys

import torch
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertSelfOutput
from transformers.models.llama.modeling_llama import LlamaRMSNorm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import fusion_compiler  # noqa: E402


class LlamaPreNorm(torch.nn.Module):
    def __init__(self, hidden=1024):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(hidden, eps=1e-5)
        self.q_proj = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x):
        return self.q_proj(self.input_layernorm(x))


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    target = "sm_90a" if device == "cuda" else "cpu"
    torch.manual_seed(0)
    bert = BertSelfOutput(BertConfig(hidden_size=1024))
    for name, model, count in (("Llama pre-norm", LlamaPreNorm(), 1),
                               ("BERT post-norm", bert, 2)):
        model = model.to(device=device, dtype=torch.bfloat16).eval()
        inputs = tuple(torch.randn(2, 128, 1024, device=device, dtype=torch.bfloat16)
                       for _ in range(count))
        compiled = fusion_compiler.compile(model, inputs, target=target)
        print(f"== {name} ({target})")
        print(compiled.explain())
        with torch.no_grad():
            diff = (compiled(*inputs).float() - model(*inputs).float()).abs().max().item()
        print(f"largest difference from PyTorch: {diff:.4g}")


if __name__ == "__main__":
    main()
