"""Drafters propose up to gamma tokens, each with a confidence (and a distribution when they have one).

Every drafter has one method, `propose(tokens, gamma) -> Draft`, in the spirit of transformers'
candidate generators. Model drafters (a separate small model, or the verifier itself under an
aggressive route) draft autoregressively through a `Scorer`, so their KV cache and cost are
tracked like the verifiers'. The prompt-lookup drafter costs nothing and has no distribution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from core.confidence import confidence
from core.sampling import Sampler
from core.scorer import Scorer, ScorerCall


@dataclass
class Draft:
    """Proposed tokens, their drafter confidences, and the drafter's distributions (None for prompt lookup)."""

    tokens: list[int] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    probs: list[torch.Tensor] | None = None
    calls: list[ScorerCall] = field(default_factory=list)


class ModelDrafter:
    """Drafts with a language model (separate, or the verifier under a route), one token per pass."""

    def __init__(self, scorer: Scorer, sampler: Sampler, signal: str, stop_ids: set[int]) -> None:
        self.scorer = scorer
        self.sampler = sampler
        self.signal = signal
        self.stop_ids = stop_ids

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        draft = Draft(probs=[])
        sequence = list(tokens)
        for _ in range(gamma):
            (logits,), call = self.scorer.predict(sequence, len(sequence), len(sequence))
            probs = self.sampler.distribution(logits)
            token = self.sampler.pick(probs)
            draft.tokens.append(token)
            draft.probs.append(probs)
            draft.confidences.append(confidence(probs, token, self.signal))
            draft.calls.append(call)
            sequence.append(token)
            if token in self.stop_ids:
                break
        return draft


class PromptLookupDrafter:
    """Copies what followed the most recent earlier occurrence of the last n tokens (n = ngram_size .. 1).

    Confidence of the k-th copied token = (n / ngram_size) x (share of all earlier occurrences of
    that n-gram whose own continuation has the same token at offset k). A long match that always
    continued the same way scores 1; a one-token match seen once with a different follow-up scores low.
    """

    def __init__(self, ngram_size: int = 3) -> None:
        self.ngram_size = ngram_size

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        for n in range(min(self.ngram_size, len(tokens) - 1), 0, -1):
            pattern = tokens[-n:]
            starts = [i for i in range(len(tokens) - n) if tokens[i:i + n] == pattern]
            if not starts:
                continue
            follow = starts[-1] + n
            copied = tokens[follow:follow + gamma]
            confidences = []
            for k, token in enumerate(copied):
                seen = [tokens[s + n + k] for s in starts if s + n + k < len(tokens)]
                agree = sum(t == token for t in seen) / len(seen)
                confidences.append(agree * n / self.ngram_size)
            return Draft(tokens=copied, confidences=confidences, probs=None)
        return Draft(probs=None)
