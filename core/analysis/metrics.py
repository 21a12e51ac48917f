"""Metric definitions, in one place. Every number the CLI, the app and the benchmark show comes from here.

Definitions (a "round" is one draft-and-verify cycle; plain decoding has one token per round):
* drafted           draft tokens proposed, summed over rounds.
* accepted          draft tokens kept in the output (by any tier), counted on the final output: the one
                    meaning of "accepted" in every table and card.
* kept_when_judged  draft tokens a tier kept when their round judged them (the sum of
                    `RoundRecord.accepted`), those an audit cut later included; with
* refused_when_judged  draft tokens a verifier refused when their round judged them (regenerated or
                    corrected, still in the output or cut later; an audit's corrections are not among
                    them: they refuse a token kept earlier), the break-even's per-token acceptance
                    alpha = kept / (kept + refused) (core.analysis.breakeven), judged on one basis.
* rolled_back       tokens an audit cut from the output (copy_evidence "audit"; core.decoding.engine).
* rejection_rate    (drafted - accepted) / drafted: a draft token is rejected when it does not
                    end up in the output, i.e. the refused one and the ones discarded after it.
                    It is 1 - vLLM's "draft acceptance rate".
* mean_accepted_length  accepted / rounds: kept draft tokens per round (every round, drafted or
                    not), NOT counting the regenerated, corrected or bonus token.
* mean_acceptance_length  1 + accepted / rounds that drafted: vLLM's "mean acceptance length",
                    with vLLM's counting (a round that drafted nothing is not a draft). It assumes
                    every draft round ends with one verifier token (the correction or the bonus), so
                    for classic SD it equals tokens per drafting round. VIA-SD breaks that
                    assumption: a round whose whole draft is kept by tiers 1 and 2 emits no extra
                    token (no bonus comes from them), so this number can exceed tokens_per_round.
                    Plain decoding drafts nothing: 1.0 (each round yields its one token).
* tokens_per_round  generated / rounds: every token emitted, the extra verifier token included.
* full_calls_per_token  full-verifier forward calls / generated tokens (plain decoding: 1.0).
* modelled_cost     sum of call costs in full-verifier one-token passes (core.decoding.cost: a call is priced
                    by the layers it runs and the tokens it processes, so a long prefill or catch-up
                    costs more than one unit).
* modelled_speedup  plain decoding's modelled cost for the same prompt and tokens / modelled_cost:
                    the accelerator model's speed-up over plain (plain itself: exactly 1).
                    float('inf') when the cost is 0 with tokens generated: no verifier ran (every
                    token was trusted directly from a free drafter); unbounded, not 0.
* tokens_per_s      generated / measured wall seconds; only meaningful when no prediction came
                    from the memo (`timing_complete`).
* words_differing   word insertions + deletions + substitutions against the full model's own greedy
                    output, over the words of the longer text (core.analysis.textdiff); special tokens never count.
* expectations_met  expectations of the prompt (core.analysis.expectations) this output meets, out of
                    expectations_total; full_expectations_met: how many the full model's own output meets.
"""

from __future__ import annotations

from collections import Counter

from core.trace import Trace
from core.vocabulary import Outcome, Reason

ACCEPTED = {Outcome.DIRECT_ACCEPT.value, Outcome.SLIM_ACCEPT.value, Outcome.FULL_ACCEPT.value}


def summarize(trace: Trace) -> dict[str, float | int | bool | str]:
    """Run-level metrics of a trace, as a flat dict (see the module docstring for definitions)."""
    n = len(trace.tokens)
    rounds = len(trace.rounds)
    drafted = sum(r.drafted for r in trace.rounds)
    drafting_rounds = sum(1 for r in trace.rounds if r.drafted)
    accepted = sum(t.outcome in ACCEPTED for t in trace.tokens)  # an audit may have cut some a round kept
    calls = [c for r in trace.rounds for c in r.calls]
    cost = sum(c.cost_units for c in calls)
    outcomes = Counter(t.outcome for t in trace.tokens)
    out: dict[str, float | int | bool | str] = {
        "tokens": n,
        "rounds": rounds,
        "drafted": drafted,
        "accepted": accepted,
        "rejection_rate": (drafted - accepted) / drafted if drafted else 0.0,
        "mean_accepted_length": accepted / rounds if rounds else 0.0,
        "mean_acceptance_length": 1.0 + accepted / drafting_rounds if drafting_rounds else 1.0,
        "tokens_per_round": n / rounds if rounds else 0.0,
        "modelled_cost": cost,
        "modelled_speedup": modelled_speedup(trace.plain_cost_units or n, cost),
        "wall_s": trace.wall_s,
        "tokens_per_s": n / trace.wall_s if trace.wall_s > 0 else 0.0,
        "timing_complete": not any(c.from_memo for c in calls),
        "stop_reason": trace.stop_reason,
        "rolled_back": len(trace.rolled_back),
    }
    for role in ("drafter", "slim", "full"):
        mine = [c for c in calls if c.role == role]
        out[f"{role}_calls"] = len(mine)
        out[f"{role}_calls_per_token"] = len(mine) / n if n else 0.0
        out[f"{role}_layer_evals"] = sum(c.layers for c in mine)
        out[f"{role}_token_layer_evals"] = sum(c.layers * c.tokens_processed for c in mine)
        out[f"{role}_wall_s"] = sum(c.wall_s for c in mine)
    out["full_calls_per_token"] = out.pop("full_calls_per_token")
    out["kept_when_judged"], out["refused_when_judged"] = judged_drafts(trace)
    for outcome in Outcome:
        out[f"share_{outcome.value}"] = outcomes.get(outcome.value, 0) / n if n else 0.0
    if trace.fidelity is not None:
        f = trace.fidelity
        out.update(identical_to_full=f.identical, common_prefix=f.common_prefix,
                   full_agreement=f.full_agreement, full_nll=f.full_nll, words_differing=f.words_differing,
                   expectations_met=f.expectations_met, expectations_total=len(f.expectations),
                   full_expectations_met=f.full_expectations_met)
    return out


def judged_drafts(trace: Trace) -> tuple[int, int]:
    """(kept_when_judged, refused_when_judged): see the module docstring."""
    refused = {Outcome.SLIM_REGENERATE.value, Outcome.FULL_CORRECT.value}
    judged = [t for t in trace.tokens + trace.rolled_back if t.reason != Reason.AUDIT_REFUSED]
    return sum(r.accepted for r in trace.rounds), sum(t.outcome in refused for t in judged)


def modelled_speedup(plain_cost: float, cost: float) -> float:
    """Plain decoding's modelled cost over this run's. A run that generated tokens at zero cost had
    no verifier run at all (all trusted directly from a free drafter): unbounded, float('inf')."""
    if cost > 0:
        return plain_cost / cost
    return float("inf") if plain_cost else 0.0


def measured_speedup(trace: Trace, baseline: Trace) -> float | None:
    """Wall-clock speed-up of `trace` over `baseline` (tokens/s ratio; run them side by side).
    None when the baseline has no measured time."""
    mine, base = summarize(trace)["tokens_per_s"], summarize(baseline)["tokens_per_s"]
    return mine / base if base else None
