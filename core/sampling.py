"""Turning logits into tokens, and the verifier's accept/reject rule (greedy and sampling).

Greedy: a verifier accepts a draft token iff it is its own argmax, else it emits its argmax.
Sampling: standard speculative rejection sampling (Leviathan et al., 2023): accept token x with
probability min(1, q(x) / p(x)); on rejection draw from the residual max(0, q - p), normalised.
With that rule the full verifier alone is exact in distribution. A drafter without a distribution
(prompt lookup) counts as p = one-hot at its token.
"""

from __future__ import annotations

import torch


class Sampler:
    """Temperature / top-p distribution and a seeded random stream for one run."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0) -> None:
        self.temperature = temperature
        self.top_p = top_p
        self.generator = torch.Generator().manual_seed(seed)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def distribution(self, logits: torch.Tensor) -> torch.Tensor:
        """Probabilities after temperature and top-p (plain softmax when greedy)."""
        logits = logits.float().cpu()
        if self.greedy:
            return torch.softmax(logits, dim=-1)
        probs = torch.softmax(logits / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            outside = sorted_probs.cumsum(-1) - sorted_probs >= self.top_p
            sorted_probs[outside] = 0.0
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
            probs = probs / probs.sum()
        return probs

    def pick(self, probs: torch.Tensor) -> int:
        """Argmax when greedy, otherwise one draw from `probs`."""
        if self.greedy:
            return int(torch.argmax(probs))
        return int(torch.multinomial(probs, 1, generator=self.generator))

    def uniform(self) -> float:
        return float(torch.rand((), generator=self.generator))


def verify(sampler: Sampler, q: torch.Tensor, token: int, p: torch.Tensor | None) -> tuple[bool, int]:
    """A verifier with distribution q judges draft `token` drawn from p: (accepted, token to emit)."""
    if sampler.greedy:
        best = int(torch.argmax(q))
        return best == token, best
    p_token = 1.0 if p is None else float(p[token])
    if p_token > 0 and sampler.uniform() < min(1.0, float(q[token]) / p_token):
        return True, token
    if p is None:
        residual = q.clone()
        residual[token] = 0.0
    else:
        residual = torch.clamp(q - p, min=0.0)
    if float(residual.sum()) <= 0.0:  # q == p: nothing left to correct towards
        residual = q
    return False, sampler.pick(residual / residual.sum())
