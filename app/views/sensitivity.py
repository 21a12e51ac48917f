"""Which threshold values give exactly the run on screen, read from its trace (issue 15 item 1).

A replay under new thresholds makes the same decisions as the run shown up to the first token whose
tier test comes out differently, so if no token's test changes, the whole run is the same (by
induction over the tokens, the path never forks). A token's tier-1 test reads its drafter confidence
against τ_accept only when it was decided by that test (reasons draft-confident, slim-confident,
not-confident); copies refused for want of evidence, free verdicts of a full pass already run, bonus
tokens, stop tokens and audits are decided by rules a threshold does not enter. So τ_accept anywhere
in the gap between the nearest such confidences below and at-or-above it reproduces the run exactly.
That is the line the cockpit shows under the sliders when a slider cannot move anything nearby, with
the setting where it does one click away (the opening preset: prompt-lookup copies score a few fixed
values and most tokens are decided by a full pass that had to run anyway).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.trace import TokenRecord, Trace
from core.vocabulary import Reason

STEP = 0.05
TAU_ACCEPT_TESTED = {Reason.DRAFT_CONFIDENT, Reason.SLIM_CONFIDENT, Reason.NOT_CONFIDENT}
"""Reasons whose tier came from comparing the drafter's confidence with τ_accept."""


@dataclass(frozen=True)
class Gap:
    """τ_accept values that give exactly this run: lo < τ_accept <= hi (both on the slider's notches)."""

    lo: float
    hi: float
    scores: tuple[float, ...]  # the distinct drafter confidences τ_accept was tested against
    tested: int  # routed tokens whose tier τ_accept decided
    routed: int  # routed tokens (output and cut)

    def covers_neighbours(self, tau: float) -> bool:
        return self.lo < tau - STEP + 1e-9 and tau + STEP <= self.hi + 1e-9


def _routed(trace: Trace) -> list[TokenRecord]:
    return [*trace.tokens, *trace.rolled_back]


def tau_accept_gap(trace: Trace, tau_accept: float) -> Gap:
    """The notches of τ_accept around `tau_accept` that reproduce `trace` exactly (module docstring)."""
    tested = [t.draft_confidence for t in _routed(trace)
              if t.reason in TAU_ACCEPT_TESTED and t.draft_confidence is not None]
    below = [c for c in tested if c < tau_accept]
    above = [c for c in tested if c >= tau_accept]
    lo = max(below, default=0.0)  # the smallest notch above lo still lets every one of those fail
    hi = min(min(above, default=1.0), 1.0 - STEP)  # 1.0 switches tier 1 off, whatever the confidence
    lo_notch = math.floor(lo / STEP + 1e-9) * STEP if below else -STEP
    hi_notch = math.floor(hi / STEP + 1e-9) * STEP
    return Gap(round(lo_notch, 4), round(hi_notch, 4), tuple(sorted({round(c, 2) for c in tested}, reverse=True)),
               len(tested), len(_routed(trace)))


def reproduces(trace: Trace, tau_accept: float, tau_slim: float) -> bool:
    """Whether these thresholds give exactly `trace` (τ_slim unchanged, τ_accept inside the run's gap)."""
    config = trace.config
    if config.mode != "via" or round(tau_slim, 4) != round(config.tau_slim, 4):
        return False
    gap = tau_accept_gap(trace, config.tau_accept)
    return gap.lo < tau_accept <= gap.hi + 1e-9 or round(tau_accept, 4) == round(config.tau_accept, 4)


def shares_line(shares: dict[int, float], tau_accept: float, tau_slim: float, source: str) -> str:
    """The prediction line for shares the engine itself computed."""
    return (f"Tier shares at τ_accept {tau_accept:.2f} / τ_slim {tau_slim:.2f}: tier 1 {shares[1]:.0%} · "
            f"tier 2 {shares[2]:.0%} · tier 3 {shares[3]:.0%} — {source}.")


def effect_line(trace: Trace | None) -> str:
    """One line for under the sliders when a one-notch move of τ_accept cannot change this run ("" otherwise)."""
    if trace is None or not trace.tokens or trace.config.mode != "via":
        return ""
    tau_accept, tau_slim = trace.config.tau_accept, trace.config.tau_slim
    gap = tau_accept_gap(trace, tau_accept)
    if not gap.covers_neighbours(tau_accept):
        return ""
    scores = ", ".join(f"{c:.2f}" for c in gap.scores[:4]) or "none"
    low = f"{gap.lo + STEP:.2f}" if gap.lo >= 0 else "0"
    other = gap.routed - gap.tested
    slim = " Tier 2 is off (τ_slim 1.0)." if tau_slim >= 1.0 else ""
    kept, cut = len(trace.tokens), len(trace.rolled_back)
    return (f"**Why the sliders change nothing here:** τ_accept anywhere from {low} to {gap.hi:.2f} gives this very "
            f"run — the drafts it tests score {scores}, and {other} of the {gap.routed} tokens routed ({kept} in the "
            f"answer, {cut} cut by the audit) were decided by rules it does not enter (a full pass that had already "
            f"run, copies awaiting evidence, the audit).{slim}")
