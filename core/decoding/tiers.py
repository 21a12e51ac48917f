"""The tier vocabulary and the pure tier rule (`decide_tier`); the engine's round applies it token by token.

Every name a trace, a chart or a caption uses for "who decided" and "why" is defined here once:
`Tier` (who), `Outcome` (what it did), `Reason` (why that tier), `Why` (what the deciding rule said)
and `Audit` (where a copy kept on trust stands), all recorded by the engine so that nobody downstream
re-derives them from confidences and thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntEnum


class Tier(IntEnum):
    """Who resolved a token."""

    DRAFT = 1  # tier 1: the drafter was confident; no verifier ran for it
    SLIM = 2  # tier 2: the slim (routed) verifier was confident and decided
    FULL = 3  # tier 3: the full verifier decided


class _Word(str, Enum):
    """A string enum that prints as its value (Python 3.10 has no `enum.StrEnum`)."""

    def __str__(self) -> str:
        return str(self.value)


class Outcome(_Word):
    """What the resolving tier did with the token."""

    DIRECT_ACCEPT = "direct-accepted"
    SLIM_ACCEPT = "slim-accepted"
    SLIM_REGENERATE = "slim-regenerated"
    FULL_ACCEPT = "full-accepted"
    FULL_CORRECT = "full-corrected"
    FULL_BONUS = "full-bonus"
    PLAIN = "plain"


class Reason(_Word):
    """Why a token went to the tier that resolved it (recorded per token in the trace)."""

    DRAFT_CONFIDENT = "draft-confident"  # tier 1: drafter confidence >= tau_accept
    SLIM_CONFIDENT = "slim-confident"  # tier 2: drafter below tau_accept, slim confidence >= tau_slim
    NOT_CONFIDENT = "not-confident"  # tier 3: below tau_accept and below tau_slim (or those tiers off)
    FREE_VERDICT = "free-verdict"  # tier 3: the full pass already ran this round; its verdict costs nothing
    COPY_NEEDS_EVIDENCE = "copy-needs-evidence"  # tier 3: a confident copy with no model evidence for it
    AUDIT_DUE = "audit-due"  # tier 3: audit_span kept tokens already await the full model's audit
    AUDIT_REFUSED = "audit-refused"  # tier 3: the full model refused an earlier trusted copy; its token replaces it
    STOP_TOKEN = "stop-token"  # tier 3: a stop token skips tier 1 (it would end the answer unverified)
    BONUS = "bonus"  # tier 3: the full pass's own next token after a fully kept draft
    NO_DRAFT = "no-draft"  # tier 3: nothing was drafted (plain decoding, or no prompt-lookup match)


class Why(_Word):
    """What the deciding rule said about a token (recorded per token as `TokenRecord.verdict`)."""

    ARGMAX = "argmax"  # the verifier's own top choice: kept by every rule
    ARGMAX_DIFFERS = "argmax differs"  # exact, greedy: the verifier's top choice replaces the draft
    RATIO_KEPT = "accepted w.p. min(1, q/p)"  # sampling, target q: speculative rejection sampling kept it
    RESAMPLED = "resampled from max(0, q - p)"  # sampling: replaced from the residual
    TRUSTED = "draft trusted, no verifier ran"  # tier 1
    OWN_TOKEN = "full verifier's own next token"  # a bonus, or the only token of a round with no draft
    WITHIN_ROLLBACK = "within rollback"  # BiLD: not the argmax, but -log q(x) <= rollback threshold
    ROLLED_BACK = "rolled back"  # BiLD: -log q(x) > rollback: replaced by the verifier's choice
    NOT_DEFERRED = "not deferred: draft kept"  # cascade: pi = p, so the draft stands
    NOT_DEFERRED_REPLACED = "not deferred: drafter's argmax"  # cascade, greedy, draft was not p's argmax
    DEFERRED_KEPT = "deferred: argmax"  # cascade: pi = q and the draft is q's argmax
    DEFERRED_REPLACED = "deferred: argmax differs"  # cascade: pi = q and the draft is not q's argmax


class Audit(_Word):
    """Where a token stands with the audit of copies kept on trust (copy_evidence "audit"; recorded per token)."""

    NONE = "none"  # not kept on trust: a verifier decided it before it was kept (or nothing is audited)
    TRUSTED = "trusted"  # kept on trust; the full model's audit is still pending
    AUDITED = "audited"  # kept on trust; a later full pass audited it and it stands
    REFUSED = "refused"  # kept on trust; the full model refused it: cut from the output (Trace.rolled_back)
    CUT = "cut"  # cut from the output with an earlier copy the audit refused (Trace.rolled_back)


OUTCOME_TIER = {
    Outcome.DIRECT_ACCEPT: Tier.DRAFT,
    Outcome.SLIM_ACCEPT: Tier.SLIM,
    Outcome.SLIM_REGENERATE: Tier.SLIM,
    Outcome.FULL_ACCEPT: Tier.FULL,
    Outcome.FULL_CORRECT: Tier.FULL,
    Outcome.FULL_BONUS: Tier.FULL,
    Outcome.PLAIN: Tier.FULL,
}

REASON_TIER = {
    Reason.DRAFT_CONFIDENT: Tier.DRAFT,
    Reason.SLIM_CONFIDENT: Tier.SLIM,
    Reason.NOT_CONFIDENT: Tier.FULL,
    Reason.FREE_VERDICT: Tier.FULL,
    Reason.COPY_NEEDS_EVIDENCE: Tier.FULL,
    Reason.AUDIT_DUE: Tier.FULL,
    Reason.AUDIT_REFUSED: Tier.FULL,
    Reason.STOP_TOKEN: Tier.FULL,
    Reason.BONUS: Tier.FULL,
    Reason.NO_DRAFT: Tier.FULL,
}


@dataclass(frozen=True)
class TierDecision:
    """The tier rule's answer for one draft token: the tier that decides it, and why."""

    tier: Tier
    reason: Reason


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
