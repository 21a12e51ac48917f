"""The numbers a walkthrough's notes quote, computed from the trace they sit beside.

A talking point writes `{kept}` or `{rounds_slim_decided}` instead of a number; the Classroom fills
each name from the trace on screen when it shows the notes, so a quoted count, share, round or cost is
always the replay's own (tests/app/test_walkthrough_notes.py checks that no number is written by
hand). Rounds are listed from 1, as the screen numbers them. A fact the trace cannot give (no
measured timing, no fidelity, no slim pass) is absent, and a point that needs it is left out.
Counts come from app.views.numbers (the cards' headline) and core.analysis (metrics, break-even);
nothing here decides a token.
"""

from __future__ import annotations

from collections import Counter
from statistics import median

from app.views.numbers import headline
from app.views.render import shown_round
from core.analysis.breakeven import break_even_alpha, break_even_cost, run_point
from core.analysis.metrics import summarize
from core.trace import CallRecord, RoundRecord, Trace
from core.vocabulary import Outcome, Tier

Facts = dict[str, str]


def listing(items: list[object]) -> str:
    """'7', '7 and 9', '7, 9 and 10' (round numbers as on screen, or words)."""
    shown = [str(r) for r in items]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1] if shown else "none"


def share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "—"


def speed_words(speedup: float) -> str:
    """'1.38× faster than plain' / '0.32×: 3.1× slower than plain' (modelled)."""
    if speedup == float("inf"):
        return "unbounded: no verifier ran"
    if speedup >= 1.0:
        return f"{speedup:.2f}× faster than plain decoding"
    slower = 1 / speedup
    return f"{speedup:.2f}×, {slower:.1f}× slower than plain decoding" if slower >= 1.1 else \
        f"{speedup:.2f}×, a little slower than plain decoding"


def _passes(trace: Trace, role: str) -> list[CallRecord]:
    """A role's passes after its first (the prefill reads the prompt, which every method pays once)."""
    return [c for r in trace.rounds for c in r.calls if c.role == role and not c.prefill]


def _ran(r: RoundRecord, role: str) -> bool:
    return any(c.role == role for c in r.calls)


def slim_cost_share(trace: Trace) -> float | None:
    """What a slim pass costs as a share of a full pass in this run: the median of each, as the run's profile
    priced them (prefills left out). None when either never ran past its prefill."""
    slim, full = _passes(trace, "slim"), _passes(trace, "full")
    if not slim or not full:
        return None
    return median(c.cost_units for c in slim) / median(c.cost_units for c in full)


def slim_rounds(trace: Trace) -> tuple[list[int], list[int]]:
    """(rounds whose slim pass decided the round's last word, so no full pass ran; rounds whose slim pass ran and
    the full model ran anyway), as screen numbers."""
    ran = [r for r in trace.rounds if _ran(r, "slim")]
    return ([shown_round(r.index) for r in ran if not _ran(r, "full")],
            [shown_round(r.index) for r in ran if _ran(r, "full")])


def _counts(trace: Trace) -> Facts:
    h = headline(trace)
    tau_accept, tau_slim = trace.policy.tau_accept, trace.policy.tau_slim  # as the engine applied them
    outcomes = Counter(t.outcome for t in trace.tokens)
    tiers = Counter(t.tier for t in trace.tokens)
    m = summarize(trace)
    return {"tokens": str(h.tokens), "rounds": str(h.rounds), "drafted": str(h.drafted), "kept": str(h.kept),
            "kept_share": share(h.kept, h.drafted), "rejected_share": f"{h.rejection:.0%}",
            "tokens_per_round": f"{h.tokens / h.rounds:.2f}" if h.rounds else "—",
            "speedup": f"{h.speedup:.2f}×", "speed_words": speed_words(h.speedup),
            "tau_accept": f"{tau_accept:g}", "tau_slim": f"{tau_slim:g}", "gamma": str(trace.config.gamma),
            "direct": str(outcomes[Outcome.DIRECT_ACCEPT.value]), "slim_tokens": str(tiers[Tier.SLIM]),
            "full_tokens": str(tiers[Tier.FULL]), "bonus": str(outcomes[Outcome.FULL_BONUS.value]),
            "no_draft_rounds": str(sum(1 for r in trace.rounds if not r.drafted)),
            "full_calls_per_token": f"{m.get('full_calls_per_token', 0.0):.2f}"}


def _break_even(trace: Trace) -> Facts:
    point = run_point(trace)
    if point is None:
        return {}
    alpha = break_even_alpha(point.cost, point.gamma, point.verify)
    cost = break_even_cost(point.alpha, point.gamma, point.verify)
    return {"drafter_cost": f"{point.cost:.2f}", "verify_cost": f"{point.verify:.2f}",
            "draft_round_cost": f"{point.gamma * point.cost:.2f}", "mean_gamma": f"{point.gamma:.1f}",
            "round_cost": f"{point.gamma * point.cost + point.verify:.2f}", "alpha": f"{point.alpha:.0%}",
            "break_even_kept": (f"at least {alpha:.0%} of the judged drafts would have to be kept" if alpha is not None
                                else "no acceptance would break even, not even every draft kept"),
            "break_even_cost": (f"the drafter would have to cost under {cost:.2f} of a full pass" if cost is not None
                                else "even a free drafter would not pay"),
            "trust_ceiling": f"{1 / point.cost:.2f}×" if point.cost > 0 else "unbounded"}


def _slim(trace: Trace) -> Facts:
    decided, missed = slim_rounds(trace)
    out: Facts = {}
    if decided or missed:
        ran = len(decided) + len(missed)
        out |= {"slim_passes": str(ran), "slim_decided": str(len(decided)), "slim_decided_share": share(len(decided),
                ran), "rounds_slim_decided": listing(decided), "rounds_slim_missed": listing(missed)}
    cost = slim_cost_share(trace)
    if cost is not None:
        out["slim_cost_share"] = f"{cost:.2f}"
    quiet = [shown_round(r.index) for r in trace.rounds if r.drafted and not _ran(r, "slim") and not _ran(r, "full")]
    if quiet:
        out |= {"rounds_no_verifier": listing(quiet), "no_verifier_count": str(len(quiet))}
    regenerated = [shown_round(t.round) for t in trace.tokens if t.outcome == Outcome.SLIM_REGENERATE.value]
    if regenerated:
        out["first_slim_regenerate"] = str(regenerated[0])
    return out


def _measured(trace: Trace) -> Facts:
    """Stopwatch facts, only for a run whose every pass ran for real (none replayed from the memo)."""
    calls = [c for r in trace.rounds for c in r.calls]
    if not calls or any(c.from_memo for c in calls) or trace.wall_s <= 0:
        return {}
    drafter = [c for c in calls if c.role == "drafter"]
    out = {"wall_s": f"{trace.wall_s:.1f}"}
    if drafter:
        out |= {"drafter_passes": str(len(drafter)), "drafter_wall_s": f"{sum(c.wall_s for c in drafter):.1f}",
                "drafter_ms": f"{median(c.wall_s for c in _passes(trace, 'drafter')) * 1000:.0f}"}
    slim, full = _passes(trace, "slim"), _passes(trace, "full")
    if slim and full:
        slim_ms, full_ms = median(c.wall_s for c in slim) * 1000, median(c.wall_s for c in full) * 1000
        out |= {"slim_ms": f"{slim_ms:.0f}", "full_ms": f"{full_ms:.0f}", "slim_wall_share": f"{slim_ms / full_ms:.2f}"}
    return out


def _fidelity(trace: Trace) -> Facts:
    f = trace.fidelity
    if f is None:
        return {}
    out = {"words_differing": f"{f.words_differing:.0%}"}
    if f.numerics_words is not None:
        out["numerics_words"] = f"{f.numerics_words:.0%}"
    copied = [c.term for c in f.expectations if c.kind == "must not appear" and not c.met and c.full_met]
    if copied:  # a misspelling the full model corrects on its own, back in this answer
        out["copied_back"] = listing([f"“{term}”" for term in copied])
    missed = [c.term for c in f.expectations if not c.met]
    if missed:
        out["missed_checks"] = listing([f"“{term}”" for term in missed])
    return out


def lesson_facts(trace: Trace) -> Facts:
    """Every fact a talking point may quote, by name, as it reads on screen."""
    return _counts(trace) | _break_even(trace) | _slim(trace) | _measured(trace) | _fidelity(trace)


def fill(point: str, facts: Facts) -> str | None:
    """A talking point with its `{names}` filled from `facts`; None when it needs a fact this trace lacks."""
    try:
        return point.format_map(facts)
    except KeyError:
        return None
