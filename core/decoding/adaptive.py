"""The state a run adapts as it goes, and its one feedback call per round (`Adaptive.update`).

The tier rule (core.decoding.tiers.decide_tier) is pure: what changes from round to round enters it as plain
facts read from these objects. A round reads them (`SlimGate.allows` once, `TrustAudit.trusted`, what waits) and,
at its end, hands everything it learnt to `Adaptive.update` in one `RoundFeedback`, in the spirit of
transformers' `update_candidate_strategy`:
* `SlimGate`: whether tier 2 may run its pass this round, fed which passes the round ran;
* `TrustAudit`: the tokens kept on trust that wait for the full model's audit (copies, and a model's greedy
  drafts, under copy evidence "audit": core.round_policy.RoundPolicy.on_trust) and whether copies are trusted
  at all yet, fed the full model's verdicts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from core.round_policy import RoundPolicy
from core.trace import TokenRecord

TRUST_AFTER = 2
"""Under copy evidence "audit", tier 1 keeps copies only after the full model kept a whole copy in this many
rounds in a row (and again after any refusal): one was not enough on the grounded prompts (README, "What VIA-SD
does here")."""

Waiting = list[tuple[int, TokenRecord]]
"""(sequence position, record) of each token kept on trust that no full pass has seen: a suffix of the output."""


@dataclass(frozen=True)
class RoundFeedback:
    """What one round tells the adaptive state at its end."""

    slim_ran: bool
    full_ran: bool
    refused: bool  # its audit refused a token kept on trust (the output was cut back)
    whole_copy_kept: bool | None  # the full model judged the round's copy: it kept all of it, or not (None: no copy)
    waiting: Waiting  # what waits on trust once the round is done


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
        """Which passes a round ran."""
        if slim_ran:
            self.recent.append(not full_ran)


@dataclass
class TrustAudit:
    """The tokens kept on trust awaiting the full model's audit, and the trust signal that lets tier 1 keep copies.

    Copies are trusted once the full model kept a whole copy in TRUST_AFTER rounds in a row, and not again
    after a refusal until it has.
    """

    waiting: Waiting = field(default_factory=list)
    kept_in_a_row: int = 0

    @property
    def trusted(self) -> bool:
        return self.kept_in_a_row >= TRUST_AFTER

    def update(self, feedback: RoundFeedback) -> None:
        self.waiting = list(feedback.waiting)
        if feedback.refused:
            self.kept_in_a_row = 0
        elif feedback.whole_copy_kept is not None:
            self.kept_in_a_row = self.kept_in_a_row + 1 if feedback.whole_copy_kept else 0


class Adaptive:
    """A run's adaptive state: the slim gate and the audit of what is kept on trust, set up from its policy."""

    def __init__(self, policy: RoundPolicy) -> None:
        self.gate = SlimGate(policy.slim_min_hit_rate)
        self.audit = TrustAudit()

    def update(self, feedback: RoundFeedback) -> None:
        """The one feedback call of a round: every piece of state learns from the same facts."""
        self.gate.record(feedback.slim_ran, feedback.full_ran)
        self.audit.update(feedback)
