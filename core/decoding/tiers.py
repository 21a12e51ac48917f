"""The pure tier rule (`decide_tier`); the engine's round applies it token by token.

Its answers use the project's vocabulary (`core.vocabulary`: `Tier` who, `Outcome` what it did, `Reason` why
that tier, `Why` what the deciding rule said, `Audit` where a copy kept on trust stands), all recorded by the
engine so that nobody downstream re-derives them from confidences and thresholds.
"""

from __future__ import annotations

from collections.abc import Callable

from core.vocabulary import Outcome, Reason, Tier, TierDecision


def fires(confidence: float, threshold: float) -> bool:
    """A tier takes a token when confidence >= threshold; threshold 1.0 switches the tier off."""
    return threshold < 1.0 and confidence >= threshold


def decide_tier(draft_confidence: float, slim_confidence: Callable[[], float], tau_accept: float, tau_slim: float,
                *, full_already_ran: bool, stop_token: bool = False, copy: bool = False,
                copy_evidence: str = "statistic", slim_agreement: Callable[[], float] | None = None,
                copies_trusted: bool = True, slim_open: bool = True, on_trust: bool = False,
                audit_due: bool = False) -> TierDecision:
    """The whole tier rule for one draft token: nothing after it changes its answer.

    Inputs: the drafter's confidence; the slim verifier's confidence in its own choice, a callable
    run only when tier 2 is consulted (it means running the slim pass); the thresholds; whether the
    full pass already ran this round (its verdicts are then free); whether the token is a stop token
    (never kept unverified); whether it is a copy (prompt lookup: its confidence is a statistic of the
    text) and what model evidence a copy needs for tier 1 (`copy_evidence`, core.config.COPY_EVIDENCE:
    "slim" = the slim verifier's probability of the copied token, `slim_agreement`, must also reach
    tau_accept; "audit" = copies must be trusted, `copies_trusted`; "verifier" = never; "statistic" =
    none); whether the slim gate lets tier 2 run this round (`slim_open`); whether tiers 1 and 2 keep the
    token only on trust, for the full model's next pass to audit (`on_trust`: copies under "audit", and a
    greedy model draft under "audit"), and then whether `audit_span` tokens already wait (`audit_due`:
    the full pass runs now).
    """
    if full_already_ran:
        return TierDecision(Tier.FULL, Reason.FREE_VERDICT)
    confident = fires(draft_confidence, tau_accept)
    if confident and copy:  # a copy's statistic counts only with the model evidence copy_evidence asks for
        if copy_evidence == "slim":
            confident = slim_open and slim_agreement is not None and fires(slim_agreement(), tau_accept)
        elif copy_evidence != "statistic":
            confident = copy_evidence == "audit" and copies_trusted
    if confident and not stop_token:  # a stop token ends the answer: never unverified
        return TierDecision(Tier.FULL, Reason.AUDIT_DUE) if on_trust and audit_due else \
            TierDecision(Tier.DRAFT, Reason.DRAFT_CONFIDENT)
    if slim_open and tau_slim < 1.0 and fires(slim_confidence(), tau_slim):  # check first: scoring runs the pass
        return TierDecision(Tier.FULL, Reason.AUDIT_DUE) if on_trust and audit_due else \
            TierDecision(Tier.SLIM, Reason.SLIM_CONFIDENT)
    if stop_token:
        return TierDecision(Tier.FULL, Reason.STOP_TOKEN)
    if copy and fires(draft_confidence, tau_accept):  # the statistic alone would have passed tier 1
        return TierDecision(Tier.FULL, Reason.COPY_NEEDS_EVIDENCE)
    return TierDecision(Tier.FULL, Reason.NOT_CONFIDENT)


def outcome_of(tier: Tier, accepted: bool) -> Outcome:
    if tier is Tier.DRAFT:
        return Outcome.DIRECT_ACCEPT
    if tier is Tier.SLIM:
        return Outcome.SLIM_ACCEPT if accepted else Outcome.SLIM_REGENERATE
    return Outcome.FULL_ACCEPT if accepted else Outcome.FULL_CORRECT
