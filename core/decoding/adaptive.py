"""The state a run adapts as it goes, each piece in the object that owns it, with its feedback hook.

The tier rule (core.decoding.tiers.decide_tier) is pure: what changes from round to round enters it
as plain facts read from these objects, in the spirit of transformers' candidate generators
(`update_candidate_strategy`):
* `SlimGate`: whether tier 2 may run its pass this round (`allows`), fed each round's passes (`record`);
* `CopyAudit`: the copies kept on trust awaiting the full model's audit, whether one is due, and
  whether copies are trusted at all yet (`trusted`), fed the full model's verdicts on copies.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from core.trace import TokenRecord
from core.vocabulary import Audit

TRUST_AFTER = 2
"""Under copy_evidence "audit", copies are kept on trust only after the full model kept a whole copy in this
many rounds in a row (and again after any refusal): one was not enough on the grounded prompts, where a
single refused stretch of trusted copies cost 2-5 % of a run (python -m core.benchmark; README)."""


class SlimGate:
    """Tier 2 pays only when its pass spares the round a full pass; otherwise it is pure overhead.

    A slim pass "hits" when the round it ran in ended without a full pass. While fewer than
    `min_hit_rate` of the last `window` slim passes hit, tier 2 is skipped (its tokens go straight to
    the full verifier, so the round costs what classic SD's does), except every `probe_every`-th
    skipped round, which tries the slim pass again so the gate can reopen.
    """

    def __init__(self, min_hit_rate: float, window: int = 8, probe_every: int = 8) -> None:
        self.min_hit_rate, self.probe_every = min_hit_rate, probe_every
        self.recent: deque[bool] = deque(maxlen=window)
        self.skipped = 0

    def allows(self) -> bool:
        """Whether this round may run the slim pass (asked once per round: a shut gate counts the round)."""
        if self.min_hit_rate <= 0.0 or len(self.recent) < (self.recent.maxlen or 0):
            return True
        if sum(self.recent) / len(self.recent) >= self.min_hit_rate:
            return True
        self.skipped += 1
        return self.skipped % self.probe_every == 0

    def record(self, slim_ran: bool, full_ran: bool) -> None:
        """Feedback at the end of a round: which passes it ran."""
        if slim_ran:
            self.recent.append(not full_ran)


@dataclass
class CopyAudit:
    """Copies kept on trust (copy_evidence "audit") and the trust signal that lets tier 1 keep them.

    `waiting` holds (sequence position, record) of each token tiers 1 and 2 kept that no full pass has
    seen yet, a suffix of the output; at most `span` wait before the full pass is due. Copies are
    trusted once the full model kept a whole copy in TRUST_AFTER rounds in a row (`judged`), and
    not again after a refusal until it has (`refused`).
    """

    span: int
    waiting: list[tuple[int, TokenRecord]] = field(default_factory=list)
    kept_in_a_row: int = 0

    @property
    def trusted(self) -> bool:
        return self.kept_in_a_row >= TRUST_AFTER

    @property
    def due(self) -> bool:
        return len(self.waiting) >= self.span

    def keep(self, position: int, record: TokenRecord) -> None:
        """A token kept on trust at sequence `position`: recorded as such until its audit."""
        record.audit = Audit.TRUSTED.value
        self.waiting.append((position, record))

    def take(self) -> list[tuple[int, TokenRecord]]:
        """Everything waiting, for the full pass now running to audit; nothing waits after."""
        waiting, self.waiting = self.waiting, []
        return waiting

    def judged(self, whole_copy_kept: bool) -> None:
        """Feedback when the full model judged a round's copy: it kept all of it, or not."""
        self.kept_in_a_row = self.kept_in_a_row + 1 if whole_copy_kept else 0

    def refused(self) -> None:
        """Feedback when the audit refused a copy kept on trust."""
        self.kept_in_a_row = 0
