"""Drafters propose up to gamma tokens, each with a confidence (and a distribution when they have one).

Every drafter implements the `Drafter` protocol, in the spirit of transformers' candidate
generators. Model drafters (a separate small model, or the verifier itself under an aggressive
route) draft autoregressively through a `Scorer`, so their KV cache and cost are tracked like the
verifiers'. The prompt-lookup drafter costs nothing and has no distribution.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from core.config import DecodeConfig
from core.decoding.confidence import confidence
from core.decoding.sampling import Sampler
from core.decoding.scorer import Scorer, ScorerCall
from core.errors import ConfigError
from core.models.loading import ModelBundle
from core.vocabulary import DraftKind


@dataclass
class Draft:
    """Proposed tokens, their drafter confidences, and the drafter's distributions (None for a copy)."""

    tokens: list[int] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    probs: list[torch.Tensor] | None = None
    calls: list[ScorerCall] = field(default_factory=list)
    is_copy: bool = False  # prompt lookup: copied text, its confidence a statistic of the text, no distribution

    def __len__(self) -> int:
        return len(self.tokens)

    def p(self, j: int) -> torch.Tensor | None:
        """The drafter's distribution at draft position j (None: prompt lookup, a one-hot at the token)."""
        return self.probs[j] if self.probs else None


class Drafter(Protocol):
    """What the engine needs from a drafter."""

    scorer: Scorer | None  # the model it runs, for the trace's call records; None when it runs no model

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        """Up to `gamma` tokens to follow `tokens`."""
        ...

    def describe(self) -> str:
        """One line for the trace's model info."""
        ...


class ModelDrafter:
    """Drafts with a language model (separate, or the verifier under a route), one token per pass.

    `stop_below` > 0 ends the draft early when the drafter's confidence drops below it: BiLD's
    fallback rule (Kim et al., 2023), so an unsure drafter hands over sooner.
    """

    def __init__(self, scorer: Scorer, sampler: Sampler, signal: str, stop_ids: set[int], description: str,
                 stop_below: float = 0.0, vocab_size: int | None = None) -> None:
        self.scorer = scorer
        self.vocab_size = vocab_size  # the verifier's: a padded drafter must not propose ids past it
        self.sampler = sampler
        self.signal = signal
        self.stop_ids = stop_ids
        self.description = description
        self.stop_below = stop_below

    def describe(self) -> str:
        return self.description

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        draft = Draft(probs=[])
        sequence = list(tokens)
        for _ in range(gamma):
            logits, call = self.scorer.predict(sequence, len(sequence), len(sequence))
            probs = self._within_vocabulary(self.sampler.distribution(logits[0]))
            token = self.sampler.pick(probs)
            draft.tokens.append(token)
            draft.probs.append(probs)
            draft.confidences.append(confidence(probs, token, self.signal))
            draft.calls.append(call)
            sequence.append(token)
            if token in self.stop_ids or draft.confidences[-1] < self.stop_below:
                break
        return draft


    def _within_vocabulary(self, probs: torch.Tensor) -> torch.Tensor:
        """Zero the padding ids a drafter's larger embedding matrix has beyond the verifier's vocabulary
        and renormalise, so the draft is a distribution over tokens the verifier can score."""
        if self.vocab_size is None or probs.shape[-1] <= self.vocab_size:
            return probs
        probs = probs.clone()
        probs[self.vocab_size:] = 0.0
        return probs / probs.sum()


class PromptLookupDrafter:
    """Copies what followed the most recent earlier occurrence of the last n tokens (n = ngram_size .. 1).

    Confidence of the k-th copied token = (n / ngram_size) x (share of all earlier occurrences of
    that n-gram whose own continuation has the same token at offset k). A long match that always
    continued the same way scores 1; a one-token match seen once with a different follow-up scores low.
    `stop_below` > 0 cuts the copy at its first token scoring below it (BiLD's fallback, as for model
    drafters): a verifier pass costs more per token it scores, and an unlikely copy is not worth scoring.
    `template`: prompt positions of the chat template (role markers, a system text; `prompting.template_positions`):
    the user's text and the answer are what a copy may come from, so those positions are never matched or copied.
    """

    scorer = None

    def __init__(self, ngram_size: int = 3, stop_below: float = 0.0, template: tuple[range, ...] = ()) -> None:
        self.ngram_size = ngram_size
        self.stop_below = stop_below
        self.template = template

    def describe(self) -> str:
        return f"prompt lookup (n <= {self.ngram_size})"

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        text: list[int | None] = list(tokens)
        for hidden in self.template:  # the template's positions match nothing and are never copied
            for i in hidden:
                if i < len(text):
                    text[i] = None
        for n in range(min(self.ngram_size, len(text) - 1), 0, -1):
            pattern = text[-n:]
            if None in pattern:
                continue
            starts = [i for i in range(len(text) - n) if text[i:i + n] == pattern]
            usable = [i for i in starts if text[i + n] is not None]
            if not usable:
                continue
            follow = usable[-1] + n
            copied = text[follow:follow + gamma]
            if None in copied:
                copied = copied[:copied.index(None)]
            confidences = []
            for k, token in enumerate(copied):
                seen = [text[s + n + k] for s in starts if s + n + k < len(text)]
                agree = sum(t == token for t in seen) / len(seen)
                if agree * n / self.ngram_size < self.stop_below:
                    break
                confidences.append(agree * n / self.ngram_size)
            return Draft(tokens=copied[:len(confidences)], confidences=confidences, is_copy=True)
        return Draft(is_copy=True)


COPY_FLOOR = 0.5
"""A hybrid drafter copies only while the lookup statistic stays at or above this."""
MIN_COPY = 2
"""... and only when at least this many tokens of the copy do (fewer than gamma allows: gamma)."""


class HybridDrafter:
    """Copies from the text when it offers a confident copy, and asks the model drafter otherwise.

    A copy costs no model pass; on tasks that rewrite their input (rename, fix a bug, add type hints) the
    answer repeats long stretches of the prompt, while elsewhere the model drafter is the better guess. The
    copy is used when at least `min_copy` of its tokens score `copy_floor` or more (the prompt-lookup
    statistic, cut at its first token below the floor); else the model drafts. A copy's Draft has no
    distribution (`is_copy`), so the engine treats it as a copy (copy evidence, audit) and the model's draft
    as a model's.
    """

    def __init__(self, lookup: PromptLookupDrafter, model: ModelDrafter, min_copy: int = MIN_COPY,
                 copy_floor: float = COPY_FLOOR) -> None:
        self.lookup, self.model = lookup, model
        self.scorer = model.scorer
        self.min_copy, self.copy_floor = min_copy, copy_floor

    def describe(self) -> str:
        return f"{self.lookup.describe()} when >= {self.min_copy} tokens match, else {self.model.describe()}"

    def propose(self, tokens: list[int], gamma: int) -> Draft:
        copy = self.lookup.propose(tokens, gamma)
        confident = next((k for k, c in enumerate(copy.confidences) if c < self.copy_floor), len(copy))
        if confident >= min(self.min_copy, gamma):
            return Draft(tokens=copy.tokens[:confident], confidences=copy.confidences[:confident], is_copy=True)
        return self.model.propose(tokens, gamma)


def make_drafter(c: DecodeConfig, kind: DraftKind, bundle: ModelBundle, scorer: Callable[[str, object, object], Scorer],
                 sampler: Sampler, stop_ids: set[int], template: tuple[range, ...] = ()) -> Drafter | None:
    """The run's drafter of the policy's `kind`: none (plain), prompt lookup, a model (a separate one, or the
    verifier under a layer route), or a hybrid of prompt lookup and the separate model. `scorer(role, loaded,
    route)` builds the model drafter's scorer as the run builds its verifiers'."""
    if kind is DraftKind.NONE:
        return None
    if kind is DraftKind.COPY:
        return PromptLookupDrafter(c.ngram_size, c.draft_stop_below, template)
    separate = c.drafter != "self"
    if separate and bundle.drafter is None:
        raise ConfigError(f"drafter '{c.drafter}' needs a separate drafter model: load one with the bundle")
    drafting = scorer("drafter", bundle.drafter if separate else bundle.verifier, "full" if separate else c.draft_route)
    head = bundle.verifier.model.get_output_embeddings()
    drafter = ModelDrafter(drafting, sampler, c.draft_signal, stop_ids,
                           bundle.drafter.label if separate else f"self ({drafting.route.describe()})",
                           c.draft_stop_below, vocab_size=int(head.weight.shape[0]) if head is not None else None)
    if kind is DraftKind.HYBRID:
        return HybridDrafter(PromptLookupDrafter(c.ngram_size, template=template), drafter)
    return drafter
