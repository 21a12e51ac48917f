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
    """The whole tier rule for one draft token: nothing after it changes its answer.

    The paper's three tiers are the three branches below; our two extensions sit apart, each in its own
    function: the model evidence a copy needs before tier 1 keeps it (`_copy_has_evidence`) and the audit that
    must run before more waits on trust (`_unless_audit_due`)."""
    if facts.full_already_ran:  # the full pass ran this round: its verdicts are exact and already paid for
        return TierDecision(Tier.FULL, Reason.FREE_VERDICT)
    # Tier 1, direct accept: c_j >= tau_accept; a stop token never ends the answer unverified
    if fires(facts.draft_confidence, policy.tau_accept) and _copy_has_evidence(facts, policy) and not facts.stop_token:
        return _unless_audit_due(TierDecision(Tier.DRAFT, Reason.DRAFT_CONFIDENT), facts, policy)
    # Tier 2, slim verifier: s_j >= tau_slim (reading s_j runs the slim pass, once per round)
    if facts.slim_open and policy.tier2_on and fires(facts.slim_confidence(), policy.tau_slim):
        return _unless_audit_due(TierDecision(Tier.SLIM, Reason.SLIM_CONFIDENT), facts, policy)
    # Tier 3, full verifier: everything else
    return TierDecision(Tier.FULL, _why_full(facts, policy))


def _copy_has_evidence(facts: TierFacts, policy: RoundPolicy) -> bool:
    """Extension: a copy's confidence is a statistic of the text, so tier 1 keeps it only with the model evidence
    `policy.copy_evidence` asks for. A model's draft needs none."""
    if not facts.is_copy:
        return True
    if policy.copy_evidence is CopyEvidence.SLIM:  # the slim verifier must agree as surely (its pass runs)
        return facts.slim_open and fires(facts.slim_agreement(), policy.tau_accept)
    if policy.copy_evidence is CopyEvidence.AUDIT:  # kept on trust once copies proved reliable
        return facts.copies_trusted
    return policy.copy_evidence is CopyEvidence.STATISTIC  # "verifier": never


def _unless_audit_due(kept: TierDecision, facts: TierFacts, policy: RoundPolicy) -> TierDecision:
    """Extension: a token tier 1 or 2 would keep on trust goes to the full pass instead when `audit_span` tokens
    already wait (that pass audits them first)."""
    if policy.on_trust(facts.is_copy) and facts.audit_due:
        return TierDecision(Tier.FULL, Reason.AUDIT_DUE)
    return kept


def _why_full(facts: TierFacts, policy: RoundPolicy) -> Reason:
    """Why tier 3 decides: a stop token, a copy whose statistic alone would have passed, or no confidence."""
    if facts.stop_token:
        return Reason.STOP_TOKEN
    if facts.is_copy and fires(facts.draft_confidence, policy.tau_accept):
        return Reason.COPY_NEEDS_EVIDENCE
    return Reason.NOT_CONFIDENT


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
