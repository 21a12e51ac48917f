"""Attention one query row at a time: a token's attention output does not depend on the other tokens of its pass.

Why: with int8 linear layers (core/models/int8_linear.py) the only step of a decoder layer whose result for a
token still depends on how many tokens share the pass is attention. torch's SDPA blocks a 4-row query
differently from a 1-row query, so the first row of a verification pass and the same token decoded alone
differ in the last bits, and after a quantised layer rounds them, sometimes in the argmax. Here each row is
its own SDPA call over exactly the keys it may see (the causal prefix, and the mask's row where there is
one): the very call plain decoding makes for that token. Attention over a short context is a small share of a
pass, so the extra calls are cheap beside the linear layers; a long prefill pays more.

`use_row_attention(model)` registers the function with transformers (name `viasd_rows`) and switches the
model to it.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

NAME = "viasd_rows"


def _row_mask(mask: torch.Tensor | None, row: int, keys: int) -> torch.Tensor | None:
    """The mask of query `row` over its first `keys` keys, or None where it hides none of them (the form a
    one-token pass gets, so both make the same call)."""
    if mask is None:
        return None
    part = mask[:, :, row:row + 1, :keys]
    visible = part if part.dtype == torch.bool else part == 0
    return None if bool(visible.all()) else part


def row_attention_forward(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          attention_mask: torch.Tensor | None, **kwargs: object) -> tuple[torch.Tensor, None]:
    """transformers' attention signature; query (batch, heads, rows, dim), keys cached first then this pass's.
    Row i sees the keys up to its own position: all but the pass's last rows - 1 - i."""
    rows, keys = query.shape[2], key.shape[2]
    kwargs.pop("is_causal", None)
    outputs = []
    for row in range(rows):
        seen = keys - rows + row + 1
        out, _ = sdpa_attention_forward(module, query[:, :, row:row + 1], key[:, :, :seen], value[:, :, :seen],
                                        _row_mask(attention_mask, row, seen), is_causal=False, **kwargs)
        outputs.append(out)
    return torch.cat(outputs, dim=1), None


def use_row_attention(model: nn.Module) -> None:
    """Register `viasd_rows` (once per process) and switch `model` to it; masks are built as for SDPA."""
    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, row_attention_forward)
        ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
