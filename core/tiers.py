"""The tier vocabulary and the pure routing rule; the engine's round applies it token by token."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum, StrEnum


class Tier(IntEnum):
    """Who resolved a token."""

    DRAFT = 1  # tier 1: the drafter was confident; no verifier ran for it
    SLIM = 2  # tier 2: the slim (routed) verifier was confident and decided
    FULL = 3  # tier 3: the full verifier decided


class Outcome(StrEnum):
    """What the resolving tier did with the token."""

    DIRECT_ACCEPT = "direct-accepted"
    SLIM_ACCEPT = "slim-accepted"
    SLIM_REGENERATE = "slim-regenerated"
    FULL_ACCEPT = "full-accepted"
    FULL_CORRECT = "full-corrected"
    FULL_BONUS = "full-bonus"
    PLAIN = "plain"


OUTCOME_TIER = {
    Outcome.DIRECT_ACCEPT: Tier.DRAFT,
    Outcome.SLIM_ACCEPT: Tier.SLIM,
    Outcome.SLIM_REGENERATE: Tier.SLIM,
    Outcome.FULL_ACCEPT: Tier.FULL,
    Outcome.FULL_CORRECT: Tier.FULL,
    Outcome.FULL_BONUS: Tier.FULL,
    Outcome.PLAIN: Tier.FULL,
}


def fires(confidence: float, threshold: float) -> bool:
    """A tier takes a token when confidence >= threshold; threshold 1.0 switches the tier off."""
    return threshold < 1.0 and confidence >= threshold


def assign_tier(draft_confidence: float, slim_confidence: Callable[[], float], tau_accept: float,
                tau_slim: float, full_already_ran: bool) -> Tier:
    """Route one draft token. `slim_confidence` is called only when tier 2 is consulted,
    because computing it means running the slim verifier."""
    if full_already_ran:
        return Tier.FULL  # its verdict is exact and already paid for this round
    if fires(draft_confidence, tau_accept):
        return Tier.DRAFT
    if tau_slim < 1.0 and fires(slim_confidence(), tau_slim):  # check first: scoring runs the slim verifier
        return Tier.SLIM
    return Tier.FULL


def outcome_of(tier: Tier, accepted: bool) -> Outcome:
    if tier is Tier.DRAFT:
        return Outcome.DIRECT_ACCEPT
    if tier is Tier.SLIM:
        return Outcome.SLIM_ACCEPT if accepted else Outcome.SLIM_REGENERATE
    return Outcome.FULL_ACCEPT if accepted else Outcome.FULL_CORRECT
