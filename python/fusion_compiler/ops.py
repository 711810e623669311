"""The front end's own graph ops: one FX node per dialect op.

`patterns.py` replaces each norm written out in ATen ops (Hugging Face's
LlamaRMSNorm arithmetic, for one) and each linear form (`linear`, `addmm`
of a transposed weight, `mm`) by a call to one of these functions, so that
the partitioner sees one node per dialect op. Each is also a plain PyTorch
implementation of what it stands for, with the module's own rounding, so a
rewritten graph still runs in PyTorch: that is how what the compiler does
not take stays in PyTorch, and how a partition that fails to compile falls
back.
"""

from __future__ import annotations

import weakref
from typing import Optional

import torch


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
             upcast: bool, weight_first: bool, weight_in_float32: bool = False) -> torch.Tensor:
    """RMSNorm over the last dimension: `fusion.rms_norm` (with its weight).

    upcast: x is normalized in float32 and rounded back to its dtype before
    the weight multiplies it (Hugging Face's LlamaRMSNorm), or after it
    where weight_in_float32 (PyTorch's own rms_norm, decomposed);
    weight_first: the product is written weight * x (which decides its
    dtype promotion)."""
    xf = x.to(torch.float32) if upcast else x
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if upcast and weight_in_float32:
        if weight is not None:
            y = weight * y if weight_first else y * weight
        return y.to(x.dtype)
    if upcast:
        y = y.to(x.dtype)
    if weight is None:
        return y
    return weight * y if weight_first else y * weight


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor],
               bias: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    """LayerNorm over the last dimension: `fusion.layer_norm`."""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def linear(x: torch.Tensor, weight: torch.Tensor,
           bias: Optional[torch.Tensor]) -> torch.Tensor:
    """nn.Linear with its [out, in] weight: `fusion.matmul {transpose_rhs}`."""
    return torch.nn.functional.linear(x, weight, bias)


def matmul(x: torch.Tensor, weight: torch.Tensor,
           bias: Optional[torch.Tensor]) -> torch.Tensor:
    """x @ weight (+ bias) with a [in, out] weight: `fusion.matmul`."""
    y = x @ weight
    return y if bias is None else y + bias


_ACTIVATIONS = {
    "identity": lambda s: s,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda s: torch.nn.functional.gelu(s, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}


def gdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, activation: str,
         scale: float) -> torch.Tensor:
    """Generalized dot-product attention, `act(scale * q k^T) v` per batch and
    head, without softmax (HSTU's attention): `fusion.gdpa`. q [B, Lq, H, D],
    k [B, Lkv, H, D], v [B, Lkv, H, Dv] -> [B, Lq, H, Dv]; float32 inside."""
    s = torch.einsum("bihd,bjhd->bhij", q.float(), k.float()) * scale
    out = torch.einsum("bhij,bjhd->bihd", _ACTIVATIONS[activation](s), v.float())
    return out.to(q.dtype).contiguous()  # the kernel's layout (and the operator's fake one)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, head_dim: int,
         interleaved: bool) -> torch.Tensor:
    """Each head of `head_dim` columns of x [..., H * D] rotated by its
    token's angles: `fusion.rope`. cos and sin [..., R] have x's leading
    dimensions or 1s (one table for every sequence), broadcast over the
    heads; the first R columns of a head become Hugging Face's
    `q * cos + rotate_half(q) * sin` (GPT-J's pairs with `interleaved`), the
    rest pass through. In x's dtype, rounded as Hugging Face's
    apply_rotary_pos_emb rounds."""
    q = x.view(*x.shape[:-1], -1, head_dim)
    c, s = cos.unsqueeze(-2), sin.unsqueeze(-2)
    r = cos.shape[-1]
    rot = q[..., :r]
    if interleaved:
        turned = torch.stack((-rot[..., 1::2], rot[..., ::2]), dim=-1).flatten(-2)
    else:
        turned = torch.cat((-rot[..., r // 2:], rot[..., :r // 2]), dim=-1)
    y = rot * c + turned * s
    if r < head_dim:
        y = torch.cat((y, q[..., r:]), dim=-1)
    return y.flatten(-2)


FRONTEND_OPS = (rms_norm, layer_norm, linear, matmul, gdpa, rope)


# head_rows' kept results: id(parameter) -> (a weak reference to it, its
# version, its address, {the gather's arguments: the rows}); an entry goes
# with its parameter (weakref.finalize), so a dropped model frees its rows.
_KEPT_ROWS: dict = {}


def head_rows(weight: torch.Tensor, groups: int, group: int, start: int,
              stop: int) -> torch.Tensor:
    """Rows [start, stop) of each of `groups` groups of `group` rows of
    `weight` [groups x group, ...] (or entries of a bias), gathered into a
    contiguous [groups x (stop - start), ...]: GPT-NeoX's q, k or v part of
    each head of query_key_value, as the weight of a linear of its own
    (patterns._split_projection). Not an op of the dialect: it runs in
    PyTorch, in front of the partition.

    Where no gradient is asked of the weight and no CUDA graph is being
    captured (a capture records the gather, so that its replays see
    in-place updates), the rows are kept and reused while the parameter is
    the same tensor, unchanged (its version counter: an optimizer step or a
    load_state_dict bumps it): an inference call then reads them instead of
    copying the weight again."""
    def gather():
        parts = weight.reshape(groups, group, *weight.shape[1:])[:, start:stop]
        return parts.reshape(groups * (stop - start), *weight.shape[1:])
    keep = type(weight) in (torch.Tensor, torch.nn.Parameter) and \
        not (torch.is_grad_enabled() and weight.requires_grad) and \
        not (weight.is_cuda and torch.cuda.is_current_stream_capturing())
    if not keep:
        return gather()
    key = (groups, group, start, stop)
    kept = _KEPT_ROWS.get(id(weight))
    if kept is None or kept[0]() is not weight:
        weakref.finalize(weight, _KEPT_ROWS.pop, id(weight), None)
        kept = None
    if kept is None or kept[1] != weight._version or kept[2] != weight.data_ptr():
        kept = (weakref.ref(weight), weight._version, weight.data_ptr(), {})
        _KEPT_ROWS[id(weight)] = kept
    if key in kept[3]:
        return kept[3][key]
    rows = gather()
    kept[3][key] = rows
    head_rows.gathers += 1
    return rows


head_rows.gathers = 0  # how many gathers ran (tests)
