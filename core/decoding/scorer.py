"""A `Scorer` is one model under one layer route with its own KV cache: the unit that costs time.

VIA-SD has three of them over the same weights (self-drafter, slim verifier, full verifier), or two
plus a separate drafter model. A scorer answers "what does this model predict after each of these
prefixes?" and keeps two ledgers:

* the *logical* ledger: what a real KV-cached run of the algorithm would process (calls, tokens,
  decoder-layer evaluations). It is the same whether predictions come from the model or the memo,
  so the cost model gives identical numbers for a real run and a threshold replay;
* the *physical* cache: what this process has actually computed, cropped back to the longest
  common prefix after a rejection and advanced in one batched pass.

The cache keeps every past position in every layer, also for sliding-window layers (Gemma-3,
Mistral, Phi-3): a sliding-window cache layer forgets what fell out of its window and so cannot be
rolled back past it, and rolling back is what speculative decoding does. The attention masks still
apply the window, so the outputs are those of the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from core.decoding.timing import Stopwatch
from core.models.layer_routes import LayerRoute
from core.models.memo import PredictionMemo, memo_key
from core.models.routed_layers import routed


@dataclass
class ScorerCall:
    """What one logical call of a scorer cost (the trace's per-call record)."""

    tokens_processed: int
    layers: int
    wall_s: float
    from_memo: bool
    prefill: bool = False  # the scorer's first pass: it read the prompt


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def full_history_cache(config: object) -> DynamicCache:
    """A KV cache with one full-history layer per decoder layer (see the module docstring)."""
    cache = DynamicCache(config=config)
    cache.layers = [DynamicLayer() for _ in cache.layers]
    return cache


class Scorer:
    """Next-token logits of one model under one route, with a KV cache and a shared memo."""

    def __init__(self, role: str, model: torch.nn.Module, route: LayerRoute, memo: PredictionMemo | None,
                 model_name: str, read_memo: bool = True) -> None:
        self.role = role
        self.read_memo = read_memo
        self.model = model
        self.route = route
        self.memo = memo
        param = next(model.parameters())
        self.device = param.device
        self.memo_key = memo_key(model_name, model, route)
        self._cache = full_history_cache(model.config)
        self._cache_tokens: list[int] = []
        self._logical_tokens: list[int] = []

    def predict(self, tokens: list[int], first: int, last: int) -> tuple[torch.Tensor, ScorerCall]:
        """Logits [last - first + 1, vocab] on the model's device; row i predicts token first + i
        from tokens[:first + i].

        One logical call: everything in tokens[:last] that this scorer has not processed yet is
        processed in one batched pass, so its KV cache catches up in that same pass.
        """
        assert 1 <= first <= last <= len(tokens)
        wanted = [tuple(tokens[:k]) for k in range(first, last + 1)]
        # Logical ledger: a real cache would keep the common prefix and process the rest.
        keep = min(_common_prefix(self._logical_tokens, tokens[:last]), first - 1)
        self._logical_tokens = list(tokens[:last])
        call = ScorerCall(tokens_processed=last - keep, layers=len(self.route.layers), wall_s=0.0, from_memo=True,
                          prefill=keep == 0)

        if self.memo is not None and self.read_memo:
            found = [self.memo.get(self.memo_key, p) for p in wanted]
            if all(f is not None for f in found):
                return torch.stack(found).to(self.device, torch.float32), call
        call.from_memo = False
        with Stopwatch(self.device) as watch:
            logits = self._forward(tokens, first, last)
        call.wall_s = watch.seconds
        if self.memo is not None:
            self.memo.put_rows(self.memo_key, wanted, logits)  # in the model's dtype: exact, and compact
        return logits.float(), call

    @torch.inference_mode()
    def _forward(self, tokens: list[int], first: int, last: int) -> torch.Tensor:
        keep = min(_common_prefix(self._cache_tokens, tokens[:last]), first - 1)
        self._crop(keep)
        ids = torch.tensor([tokens[keep:last]], device=self.device)
        positions = torch.arange(keep, last, device=self.device).unsqueeze(0)
        wanted = last - first + 1  # only these rows go through the output head (logits_to_keep)
        with routed(self.route):
            out = self.model(input_ids=ids, position_ids=positions, cache=self._cache, use_cache=True,
                             logits_to_keep=wanted)
        self._cache_tokens = list(tokens[:last])
        return out.logits[0, -wanted:]  # the model's own dtype; callers get fp32 (score)

    def _crop(self, length: int) -> None:
        """Crop every layer's cache to an absolute length (layers skipped by the route stay empty)."""
        for layer in self._cache.layers:
            excess = layer.get_seq_length() - length
            if excess > 0:
                layer.crop(-excess)
        self._cache_tokens = self._cache_tokens[:length]
