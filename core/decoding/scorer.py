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

A round reads a verifier through a `VerifierPass`: one batched pass of a scorer over the round's draft, run the
first time a token asks for it (its KV rollback, `Scorer.rollback_to`, happens then).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from core.decoding.confidence import confidences
from core.decoding.sampling import Sampler
from core.decoding.shared_pass import SHARED_PASSES
from core.decoding.timing import Stopwatch
from core.models.kv_pool import common_prefix
from core.models.layer_routes import LayerRoute
from core.models.memo import PredictionMemo, memo_key
from core.models.restricted_head import align
from core.models.routed_layers import routed


@dataclass
class ScorerCall:
    """What one logical call of a scorer cost (the trace's per-call record)."""

    tokens_processed: int
    layers: int
    wall_s: float
    from_memo: bool
    prefill: bool = False  # the scorer's first pass: it read the prompt


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
        keep = min(common_prefix(self._logical_tokens, tokens[:last]), first - 1)
        self._logical_tokens = list(tokens[:last])
        call = ScorerCall(tokens_processed=last - keep, layers=len(self.route.layers), wall_s=0.0, from_memo=True,
                          prefill=keep == 0)

        if self.memo is not None and self.read_memo:
            found = [self.memo.get(self.memo_key, p) for p in wanted]
            if all(f is not None for f in found):
                return torch.stack(found).to(self.device, torch.float32), call
        call.from_memo = False
        shared = SHARED_PASSES.get()  # a run computed together with others: its passes go through one batch
        if shared is not None:
            logits, call.wall_s = shared.forward(self, tokens, first, last)
        else:
            with Stopwatch(self.device) as watch:
                logits = self.forward(tokens, first, last)
            call.wall_s = watch.seconds
        if self.memo is not None:
            self.memo.put_rows(self.memo_key, wanted, logits)  # in the model's dtype: exact, and compact
        return logits.float(), call

    def rollback_to(self, tokens: list[int], at_most: int) -> int:
        """The KV rollback of speculative decoding: crop the physical cache to the longest common prefix of what it
        holds and `tokens` (at most `at_most` positions); returns the length kept. One rule undoes a rejected
        draft or an audit's cut, whatever way the last round ended, with no special case."""
        keep = min(common_prefix(self._cache_tokens, tokens), at_most)
        self._crop(keep)
        return keep

    def _borrow(self, tokens: list[int]) -> None:
        """A memo-allowed scorer with nothing computed yet starts from the pooled cache sharing the longest prefix
        with `tokens` (core.models.kv_pool): a re-route computes only its branch, not the prompt again."""
        if self._cache_tokens or self.memo is None or not self.read_memo:
            return
        borrowed = self.memo.caches.lend(self.memo_key, tokens)
        if borrowed is not None:
            self._cache, self._cache_tokens = borrowed

    def release(self) -> None:
        """The run is over: a memo-allowed scorer leaves its cache to the pool for the next run of its model."""
        if self._cache_tokens and self.memo is not None and self.read_memo:
            self.memo.caches.give(self.memo_key, self._cache, self._cache_tokens)
        self._cache, self._cache_tokens = full_history_cache(self.model.config), []

    @property
    def cache(self) -> DynamicCache:
        return self._cache

    def prepare(self, tokens: list[int], first: int, last: int) -> int:
        """Before a pass over tokens[:last]: the cache borrowed or rolled back; returns the positions it keeps (the
        last prefix token is always run: its row is wanted)."""
        self._borrow(tokens[:last])
        return self.rollback_to(tokens[:last], first - 1)

    def took(self, tokens: list[int], last: int) -> None:
        """After a pass: the cache holds tokens[:last]."""
        self._cache_tokens = list(tokens[:last])

    @torch.inference_mode()
    def forward(self, tokens: list[int], first: int, last: int) -> torch.Tensor:
        """Logits of rows first..last from the model (no memo), this scorer's cache advanced over tokens[:last]."""
        keep = self.prepare(tokens, first, last)
        ids = torch.tensor([tokens[keep:last]], device=self.device)
        positions = torch.arange(keep, last, device=self.device).unsqueeze(0)
        wanted = last - first + 1  # only these rows go through the output head (logits_to_keep)
        align(self.model, tokens[:keep])  # runs interleave on one model: the head reads this run's text
        with routed(self.route):
            out = self.model(input_ids=ids, position_ids=positions, cache=self._cache, use_cache=True,
                             logits_to_keep=wanted)
        self.took(tokens, last)
        return out.logits[0, -wanted:]  # the model's own dtype; callers get fp32 (score)

    def _crop(self, length: int) -> None:
        """Crop every layer's cache to an absolute length (layers skipped by the route stay empty)."""
        for layer in self._cache.layers:
            excess = layer.get_seq_length() - length
            if excess > 0:
                layer.crop(-excess)
        self._cache_tokens = self._cache_tokens[:length]


class VerifierPass:
    """One verifier's batched pass over a round's draft, run the first time anything asks for it.

    `ran` says whether it has run; `q(j)`, `best(j)` and `confidence(j)` read draft position j.
    The pass may also cover `earlier` tokens kept before the draft (copies awaiting their audit):
    they sit at draft positions -earlier .. -1.
    Distributions stay on the device; argmax and confidence of every position come to the host in
    one transfer per pass.
    """

    def __init__(self, scorer: Scorer, sequence: list[int], first: int, last: int, sampler: Sampler,
                 signal: str, on_call: Callable[[Scorer, ScorerCall], None], earlier: int = 0) -> None:
        self.scorer, self.sequence, self.first, self.last = scorer, sequence, first - earlier, last
        self.earlier = earlier
        self.sampler, self.signal, self.on_call = sampler, signal, on_call
        self.ran = False
        self._q: torch.Tensor | None = None
        self._best: list[int] = []
        self._confidence: list[float] = []

    def run(self) -> None:
        logits, call = self.scorer.predict(self.sequence, self.first, self.last)
        self._q = self.sampler.distribution(logits)
        best = torch.argmax(self._q, dim=-1)
        both = torch.stack([best.float(), confidences(self._q, best, self.signal)]).tolist()
        self._best, self._confidence = [int(b) for b in both[0]], both[1]
        self.ran = True
        self.on_call(self.scorer, call)

    def _ready(self) -> VerifierPass:
        """Run the pass the first time anything asks for one of its positions."""
        if not self.ran:
            self.run()
        return self

    def q(self, j: int) -> torch.Tensor:
        return self._ready()._q[self.earlier + j]

    def best(self, j: int) -> int:
        return self._ready()._best[self.earlier + j]

    def confidence(self, j: int) -> float:
        return self._ready()._confidence[self.earlier + j]

    def recorded_confidence(self, j: int) -> float | None:
        """The confidence at j if this pass ran and covered j, else None (for the trace)."""
        row = self.earlier + j
        return self._confidence[row] if self.ran and 0 <= row < len(self._confidence) else None
