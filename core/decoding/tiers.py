"""The tier rule: one draft token's facts and the run's policy in, the tier that decides it and why out.

`decide_tier` is the whole rule (the algorithm box of core.decoding.engine, step 2). Its inputs are two values:
the run's `RoundPolicy` (core.round_policy: thresholds as applied, copy evidence, what waits on trust) and the
token's `TierFacts` (its confidences, the slim ones lazy because reading them runs the slim pass; whether it is
a copy or a stop token; the round's state). The engine records the plain facts with every token
(`core.trace.TierInputs`), so anyone can ask the same rule again (`replayed_facts`): the sensitivity line asks
it under other thresholds, the tests check that it answers what the engine recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.round_policy import RoundPolicy, fires
from core.trace import TierInputs, TokenRecord, UnwrittenDecision
from core.vocabulary import CopyEvidence, Outcome, Reason, Tier, TierDecision


@dataclass(frozen=True)
class TierFacts:
    """Everything about one draft token that decides its tier, besides the policy."""

    draft_confidence: float  # the drafter's (a copy's: the lookup statistic)
    slim_confidence: Callable[[], float]  # the slim verifier's in its own choice; reading it runs the slim pass
    slim_agreement: Callable[[], float]  # the slim verifier's probability of the drafted token (copy evidence)
    is_copy: bool = False  # a prompt-lookup copy: its confidence is a statistic of the text, not a belief
    stop_token: bool = False  # it would end the answer
    full_already_ran: bool = False  # the full pass ran earlier this round: its verdicts are exact and paid for
    slim_open: bool = True  # the slim gate lets tier 2 run its pass this round
    copies_trusted: bool = True  # the full model kept whole copies lately (copy evidence "audit")
    audit_due: bool = False  # audit_span tokens already wait on trust: the full pass must run now

    def inputs(self, slim_agreement: float | None = None) -> TierInputs:
        """The plain facts, for the token's record (the confidences are recorded beside them)."""
        return TierInputs(is_copy=self.is_copy, stop_token=self.stop_token, full_already_ran=self.full_already_ran,
                          slim_open=self.slim_open, copies_trusted=self.copies_trusted, audit_due=self.audit_due,
                          slim_agreement=slim_agreement)


def decide_tier(facts: TierFacts, policy: RoundPolicy) -> TierDecision:
    """The whole tier rule for one draft token: nothing after it changes its answer."""
    if facts.full_already_ran:
        return TierDecision(Tier.FULL, Reason.FREE_VERDICT)
    confident = fires(facts.draft_confidence, policy.tau_accept)
    if confident and facts.is_copy:  # a copy's statistic counts only with the model evidence the policy asks for
        confident = _has_evidence(facts, policy)
    due = policy.on_trust(facts.is_copy) and facts.audit_due  # it would wait on trust, but the queue is full
    if confident and not facts.stop_token:  # tier 1; a stop token never ends the answer unverified
        return TierDecision(Tier.FULL, Reason.AUDIT_DUE) if due else TierDecision(Tier.DRAFT, Reason.DRAFT_CONFIDENT)
    if facts.slim_open and policy.tier2_on and fires(facts.slim_confidence(), policy.tau_slim):  # tier 2
        return TierDecision(Tier.FULL, Reason.AUDIT_DUE) if due else TierDecision(Tier.SLIM, Reason.SLIM_CONFIDENT)
    if facts.stop_token:
        return TierDecision(Tier.FULL, Reason.STOP_TOKEN)
    if facts.is_copy and fires(facts.draft_confidence, policy.tau_accept):  # the statistic alone would have passed
        return TierDecision(Tier.FULL, Reason.COPY_NEEDS_EVIDENCE)
    return TierDecision(Tier.FULL, Reason.NOT_CONFIDENT)  # tier 3


def _has_evidence(facts: TierFacts, policy: RoundPolicy) -> bool:
    """Whether a copy confident on its statistic has the model evidence `policy.copy_evidence` asks of tier 1."""
    if policy.copy_evidence is CopyEvidence.SLIM:  # the slim verifier must agree as surely (its pass runs)
        return facts.slim_open and fires(facts.slim_agreement(), policy.tau_accept)
    if policy.copy_evidence is CopyEvidence.AUDIT:  # kept on trust once copies proved reliable
        return facts.copies_trusted
    return policy.copy_evidence is CopyEvidence.STATISTIC  # "verifier": never


def outcome_of(tier: Tier, accepted: bool) -> Outcome:
    if tier is Tier.DRAFT:
        return Outcome.DIRECT_ACCEPT
    if tier is Tier.SLIM:
        return Outcome.SLIM_ACCEPT if accepted else Outcome.SLIM_REGENERATE
    return Outcome.FULL_ACCEPT if accepted else Outcome.FULL_CORRECT


class NotRecordedError(LookupError):
    """The rule asked a replayed token for a slim number its run never computed (its pass had not run)."""


def _recorded(value: float | None) -> Callable[[], float]:
    def read() -> float:
        if value is None:
            raise NotRecordedError("the slim pass had not run for this token")
        return value
    return read


def replayed_facts(t: TokenRecord | UnwrittenDecision) -> TierFacts | None:
    """The facts the rule read for a recorded decision (`Trace.decisions`; None: no draft decided it, or a trace from
    before facts were recorded). A slim number the run never computed raises `NotRecordedError` when asked for."""
    given = t.inputs
    if given is None or t.draft_confidence is None:
        return None
    return TierFacts(t.draft_confidence, _recorded(t.slim_confidence), _recorded(given.slim_agreement),
                     is_copy=given.is_copy, stop_token=given.stop_token, full_already_ran=given.full_already_ran,
                     slim_open=given.slim_open, copies_trusted=given.copies_trusted, audit_due=given.audit_due)
