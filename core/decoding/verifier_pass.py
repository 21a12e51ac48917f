"""A verifier's batched pass over one round's draft, run only when the round first needs it."""

from __future__ import annotations

from collections.abc import Callable

import torch

from core.decoding.confidence import confidences
from core.decoding.sampling import Sampler
from core.decoding.scorer import Scorer, ScorerCall


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
