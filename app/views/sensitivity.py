"""Which threshold values give exactly the run on screen, found by asking the engine's own tier rule again.

A replay under other thresholds makes the same decisions as the run shown up to the first token whose tier
comes out differently, so if no token's decision changes, the whole run is the same (by induction over the
tokens, the path never forks). Every routed token (in the answer or cut by the audit) records the facts the
rule read (`TokenRecord.inputs`, beside its confidences), so `same_run` hands each one to the very rule the
engine ran (`core.decoding.tiers.decide_tier`) under the run's policy retuned to the new thresholds: no second
model of which reasons read which threshold. A decision that would need a slim number the run never computed
counts as a change (the slim pass would run where it did not), and so does a round whose slim pass would no
longer run (its cost would change). The line under the sliders names the run on screen and its settings, and
the notches of each slider that give that very run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from core.decoding.tiers import NotRecordedError, TierFacts, decide_tier, replayed_facts
from core.round_policy import OFF, RoundPolicy, in_order, switched_off, threshold_text
from core.trace import Trace
from core.vocabulary import TierDecision

STEP = 0.05
NOTCHES = [round(k * STEP, 4) for k in range(round(OFF / STEP) + 1)]
"""Every value a threshold slider can take (1.0: its tier off)."""


def _asked(facts: TierFacts, policy: RoundPolicy) -> tuple[TierDecision, bool]:
    """The rule's decision for these facts, and whether it read a slim number (reading one runs the slim pass)."""
    read: list[bool] = []

    def spy(number: Callable[[], float]) -> Callable[[], float]:
        def value() -> float:
            read.append(True)
            return number()
        return value

    probe = replace(facts, slim_confidence=spy(facts.slim_confidence), slim_agreement=spy(facts.slim_agreement))
    return decide_tier(probe, policy), bool(read)


def same_run(trace: Trace, tau_accept: float, tau_slim: float) -> bool:
    """Whether these thresholds give exactly `trace`: the rule decides every routed token as it was decided, and
    every round runs its slim pass exactly when it did (else its cost would change). False for a trace that
    recorded no facts (made before they were recorded) unless the thresholds are its own."""
    policy = trace.policy
    if not in_order(tau_accept, tau_slim):
        return False
    retuned = policy.retuned(tau_accept, tau_slim)
    if retuned == policy:
        return True
    decisions = trace.decisions()
    if any(t.inputs is None for t in decisions):
        return False
    slim_ran: dict[int, list[bool]] = {}
    for t in decisions:
        facts = replayed_facts(t)
        try:
            decision, asked = _asked(facts, retuned)
        except NotRecordedError:
            return False
        if (int(decision.tier), decision.reason.value) != (t.tier, t.reason):
            return False
        ran = slim_ran.setdefault(t.round, [False, False])
        ran[0] |= _asked(facts, policy)[1]
        ran[1] |= asked
    return all(before == after for before, after in slim_ran.values())


def reproducing(trace: Trace, which: str) -> tuple[float, float]:
    """How far one slider ("tau_accept" or "tau_slim") moves, the other held, and still gives this very run: (lo, hi),
    the furthest notches either side of the run's own value with every notch between reproducing it (its own value
    when a one-notch move changes the run)."""
    policy = trace.policy
    own = policy.tau_accept if which == "tau_accept" else policy.tau_slim

    def same(value: float) -> bool:
        return same_run(trace, value, policy.tau_slim) if which == "tau_accept" else \
            same_run(trace, policy.tau_accept, value)

    lo = hi = own
    for value in sorted((v for v in NOTCHES if v < own - 1e-9), reverse=True):
        if not same(value):
            break
        lo = value
    for value in (v for v in NOTCHES if v > own + 1e-9):
        if not same(value):
            break
        hi = value
    return lo, hi


def _span(name: str, lo: float, hi: float) -> str:
    if lo == hi:
        return f"{name} only at {threshold_text(lo)}"
    return f"{name} anywhere from {threshold_text(lo)} to {threshold_text(hi)}"


def shares_line(shares: dict[int, float], tau_accept: float, tau_slim: float, source: str) -> str:
    """The prediction line for shares the engine itself computed."""
    return (f"Tier shares at τ_accept {tau_accept:.2f} / τ_slim {tau_slim:.2f}: tier 1 {shares[1]:.0%} · "
            f"tier 2 {shares[2]:.0%} · tier 3 {shares[3]:.0%} — {source}.")


def effect_line(trace: Trace | None) -> str:
    """The line under the sliders, about the run on screen only, when a one-notch move of τ_accept either way gives
    that very run ("" otherwise): which notches of each slider reproduce it, read by asking the rule again."""
    if trace is None or not trace.tokens or trace.policy.name != "VIA-SD" or trace.partial:
        return ""
    policy = trace.policy
    a_lo, a_hi = reproducing(trace, "tau_accept")
    if not (a_lo < policy.tau_accept and (a_hi > policy.tau_accept or switched_off(policy.tau_accept))):
        return ""
    s_lo, s_hi = reproducing(trace, "tau_slim")
    decided = trace.decisions()
    settings = f"τ_accept {threshold_text(policy.tau_accept)}, τ_slim {threshold_text(policy.tau_slim)}"
    slim = (f", and so does {_span('τ_slim', s_lo, s_hi)} (τ_accept held)" if s_lo != s_hi else
            "; a one-notch move of τ_slim does change it")
    answer = sum(t.draft_confidence is not None for t in trace.tokens)  # the bonus and refusal tokens: no draft
    unwritten = sum(r.unwritten is not None for r in trace.rounds)
    return (f"**The run on screen ({settings}):** {_span('τ_accept', a_lo, a_hi)} gives this very run (τ_slim "
            f"held){slim}. The tier rule, asked again with the facts each of its {len(decided)} drafted tokens "
            f"recorded ({answer} in the answer, {len(trace.rolled_back)} cut by the audit, {unwritten} left "
            "unwritten by a refusal), decides every one the same there; past those notches it "
            "may decide one differently.")
