"""A drafter output head that scores only the tokens likely next, and the full vocabulary when it is unsure.

Why: the 0.5B drafter's head is 136M of its 630M parameters (151,936 rows), read in full for every drafted
token, although the next token is nearly always a frequent piece or one the text already holds. This head scores

* the *static* rows: ids below `top` (BPE learns its most frequent merges first, so low ids are the frequent
  pieces) and the tokenizer's special and stop tokens, in one small matrix built once;
* the text's own tokens (prompt and output so far), gathered from the full head per pass;

and returns logits over the whole vocabulary, -inf elsewhere, so every proposal is a valid verifier token. When
the restricted top-1 is unsure (its probability within the allowed tokens < `fallback_below`) that row is scored
by the full head instead. So a drafter confidence means: the probability under the full head when it fell back,
else the probability renormalised over the allowed tokens (an upper bound on the full one; a token outside them
has probability 0 there). Exactness is untouched: every draft is still verified or audited.

Which tokens "the text holds" is read by a forward pre-hook from each call's input ids and positions, kept
aligned to positions (a rolled-back cache forgets its tokens). The positions before a call are the text of
whichever call came last, so a caller that interleaves several texts on one model (a `Scorer` per run: grid points
side by side, a cache borrowed from the pool) first shows the head its own text (`align`). So a row's allowed set
depends only on its prefix: a replay from the prediction memo sees what a real run saw.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from core.models.quantised import WeightOnlyLinear, weight_bytes

FALLBACK_BELOW = 0.5
"""A row whose restricted top-1 probability is under this is scored by the full head (README: how often)."""


def _row_weights(full: nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Rows `ids` of a full head: (weight rows, int8 scales or None), for a bf16/fp32 or an int8 head."""
    if isinstance(full, WeightOnlyLinear):
        return full.qweight.index_select(0, ids), full.scales.index_select(0, ids)
    return full.weight.index_select(0, ids), None


class RestrictedHead(nn.Module):
    """Scores the static rows and the text's own tokens; the full head for rows it is unsure of (module doc)."""

    def __init__(self, full: nn.Module, static: nn.Module, static_ids: torch.Tensor, vocab_size: int,
                 fallback_below: float = FALLBACK_BELOW, fallback: nn.Module | None = None) -> None:
        super().__init__()
        if isinstance(full, WeightOnlyLinear) and full.bits != 8:
            raise ValueError("the full head must be unquantised or int8: the text's rows are gathered from it")
        self.full, self.static = full, static
        self.fallback = fallback  # the full head in fewer bits for unsure rows (None: `full`); int4 reads 1/2 of int8
        self.register_buffer("static_ids", static_ids)
        self.vocab_size, self.fallback_below = vocab_size, fallback_below
        self._static_set = frozenset(static_ids.tolist())
        self.history: list[int] = []  # the text's tokens by position, written by `track` before every pass
        self.rows = self.fallbacks = 0  # rows scored, and how many of them the full head scored

    @property
    def pass_bytes(self) -> int:
        """What a pass reads: the static rows (a fallback or the text's rows add to it, rarely and little)."""
        return weight_bytes(self.static)

    @property
    def top(self) -> int:
        return len(self.static_ids)

    def track(self, input_ids: torch.Tensor, start: int) -> None:
        """The call's input ids, placed at positions start.. (the cache holds exactly the positions before)."""
        del self.history[start:]
        self.history.extend(input_ids[0].tolist())

    def align(self, text: list[int]) -> None:
        """The text before the next call's positions is `text` (its caller's own, not the last caller's)."""
        self.history[:] = text

    def extra_ids(self) -> list[int]:
        """The text's tokens outside the static rows (sorted, so a prefix always gives the same order)."""
        return sorted({t for t in self.history if t not in self._static_set and 0 <= t < self.vocab_size})

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        flat = hidden.reshape(-1, hidden.shape[-1])
        extra = torch.tensor(self.extra_ids(), dtype=torch.long, device=flat.device)
        parts = [self.static(flat)]
        if len(extra):
            weight, scales = _row_weights(self.full, extra)
            rows = (torch._weight_int8pack_mm(flat.contiguous(), weight, scales.to(flat.dtype)) if scales is not None
                    else functional.linear(flat, weight.to(flat.dtype)))
            parts.append(rows)
        scored = torch.cat(parts, dim=-1)
        out = torch.full((flat.shape[0], self.vocab_size), float("-inf"), dtype=scored.dtype, device=flat.device)
        out[:, self.static_ids] = scored[:, : self.top]
        if len(extra):
            out[:, extra] = scored[:, self.top:]
        unsure = torch.softmax(scored.float(), dim=-1).amax(dim=-1) < self.fallback_below
        if bool(unsure.any()):
            head = self.fallback if self.fallback is not None else self.full
            out[unsure] = head(flat[unsure]).to(out.dtype)
        self.rows += flat.shape[0]
        self.fallbacks += int(unsure.sum())
        return out.reshape(*hidden.shape[:-1], self.vocab_size)

    def extra_repr(self) -> str:
        return f"static rows={self.top}, vocab={self.vocab_size}, fallback below {self.fallback_below}"


def _start_position(input_ids: torch.Tensor, kwargs: dict) -> int:
    """Where this call's tokens start: its position ids, else its cache position, else the cache's length."""
    for name in ("position_ids", "cache_position"):
        value = kwargs.get(name)
        if isinstance(value, torch.Tensor) and value.numel():
            return int(value.reshape(-1)[0])
    cache = kwargs.get("cache", kwargs.get("past_key_values"))
    return int(cache.get_seq_length()) if cache is not None and hasattr(cache, "get_seq_length") else 0


def install(model: nn.Module, head: RestrictedHead) -> None:
    """Put `head` in place of the model's output head, fed by a pre-hook that tracks the text's tokens."""

    def track(_module: nn.Module, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if isinstance(ids, torch.Tensor):
            head.track(ids, _start_position(ids, kwargs))

    model.set_output_embeddings(head)
    model.register_forward_pre_hook(track, with_kwargs=True)


def align(model: nn.Module, text: list[int]) -> None:
    """Before a call on `model` continuing `text`: a restricted head reads `text` as what precedes the call's
    positions (another text's call may have run last); any other head needs nothing."""
    head = model.get_output_embeddings()
    if isinstance(head, RestrictedHead):
        head.align(text)


def static_ids(top: int, vocab_size: int, special: set[int]) -> torch.Tensor:
    """The static rows: ids below `top` and the special / stop tokens, sorted."""
    return torch.tensor(sorted(set(range(min(top, vocab_size))) | {t for t in special if 0 <= t < vocab_size}),
                        dtype=torch.long)
