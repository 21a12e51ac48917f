"""Turning logits into tokens, and the verifier's accept/reject rule (greedy and sampling).

Greedy: a verifier accepts a draft token iff it is its own argmax, else it emits its argmax.
Sampling: standard speculative rejection sampling (Leviathan et al., 2023): accept token x with
probability min(1, q(x) / p(x)); on rejection draw from the residual max(0, q - p), normalised.
With that rule the full verifier alone is exact in distribution. A drafter without a distribution
(prompt lookup) counts as p = one-hot at its token.

Distributions stay on the model's device; only the few numbers a decision needs cross to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.vocabulary import Why


class Sampler:
    """Temperature / top-p distribution and a seeded random stream for one run."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0) -> None:
        self.temperature = temperature
        self.top_p = top_p
        self.generator = torch.Generator().manual_seed(seed)  # on the host: reproducible on any device

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def distribution(self, logits: torch.Tensor) -> torch.Tensor:
        """Probabilities after temperature and top-p (plain softmax when greedy), over the last axis."""
        logits = logits.float()
        if self.greedy:
            return torch.softmax(logits, dim=-1)
        probs = torch.softmax(logits / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True, dim=-1)
            outside = sorted_probs.cumsum(-1) - sorted_probs >= self.top_p
            sorted_probs = sorted_probs.masked_fill(outside, 0.0)
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
            probs = probs / probs.sum(-1, keepdim=True)
        return probs

    def pick(self, probs: torch.Tensor) -> int:
        """Argmax when greedy, otherwise one draw from `probs` (1-D)."""
        if self.greedy:
            return int(torch.argmax(probs))
        return int(torch.multinomial(probs.float().cpu(), 1, generator=self.generator))

    def uniform(self) -> float:
        return float(torch.rand((), generator=self.generator))


def aligned(q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """p over q's vocabulary: a drafter's embedding matrix is often padded to a different size than
    the verifier's, with the same tokenizer; ids past the tokenizer get no probability either way."""
    p = p.to(q.device, q.dtype)
    if p.shape[-1] == q.shape[-1]:
        return p
    if p.shape[-1] > q.shape[-1]:
        return p[..., : q.shape[-1]]
    return torch.nn.functional.pad(p, (0, q.shape[-1] - p.shape[-1]))


@dataclass(frozen=True)
class Verdict:
    """A verifier's decision on one draft token: keep it, or emit `token` instead; `why` (a `Why`) is recorded."""

    accepted: bool
    token: int
    why: Why


class ExactRule:
    """Lossless verification: greedy argmax match, or speculative rejection sampling."""

    name = "exact"

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler

    def judge(self, q: torch.Tensor, token: int, p: torch.Tensor | None, best: int) -> Verdict:
        """`q` is the verifier's distribution at this position, `best` its argmax (already on the host)."""
        if self.sampler.greedy:
            return Verdict(best == token, best, Why.ARGMAX if best == token else Why.ARGMAX_DIFFERS)
        accepted, out = rejection_sample(self.sampler, q, token, p)
        return Verdict(accepted, out, Why.RATIO_KEPT if accepted else Why.RESAMPLED)


def rejection_sample(sampler: Sampler, q: torch.Tensor, token: int, p: torch.Tensor | None) -> tuple[bool, int]:
    """Speculative rejection sampling (sampling only; greedy rules match the argmax themselves): a verifier with
    distribution q judges draft `token` drawn from p, (accepted, token to emit)."""
    if p is not None:
        p = aligned(q, p)
    p_token = 1.0 if p is None else float(p[token])
    q_token = float(q[token]) if token < q.shape[-1] else 0.0
    if p_token > 0 and sampler.uniform() < min(1.0, q_token / p_token):
        return True, token
    if p is None:
        residual = q.clone()
        if token < residual.shape[-1]:
            residual[token] = 0.0
    else:
        residual = torch.clamp(q - p, min=0.0)
    if float(residual.sum()) <= 0.0:  # q == p: nothing left to correct towards
        residual = q
    return False, sampler.pick(residual / residual.sum())
