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

Serving metrics (`AcceptanceCounts`), counted as vLLM counts them (vllm/v1/spec_decode/metrics.py), per run or
pooled over a prompt set by adding the counts (never by averaging rates). A "draft" is a round that drafted at
least one token (vLLM's num_drafts); its draft positions are 1..gamma.
* draft_acceptance_rate   accepted / drafted: vLLM's "draft acceptance rate" (1 - rejection_rate).
* mean_acceptance_length  1 + accepted / drafts: vLLM's (the same number as in summarize()).
* acceptance_by_position  for position i: drafts whose i-th draft token is in the output / drafts: vLLM's
                    "per-position acceptance rate" (a draft shorter than i counts as not accepted there, as a
                    vLLM draft cut short does). The rates sum to mean_acceptance_length - 1.
* drafts_per_round  drafts / rounds: the share of rounds that drafted (prompt lookup finds no match, a draft
                    cut below draft_stop_below before its first token); vLLM has no rounds without a draft.
* draft_length      drafted / drafts: draft tokens per draft (gamma, less where drafts were cut).
VIA-SD's tier-1 tokens (direct-accepted: no verifier ran for them) and tier-2 tokens (slim-accepted) count as
accepted, as classic SD's full-accepted ones do: "accepted" means "kept in the output", whoever kept it. vLLM's
rejection sampler is the only judge there, so its accepted tokens are all verifier-checked; ours are split by
tier in `by_tier_per_pos` so a reader sees how many no verifier looked at.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

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
        out.update(identical_to_full=f.identical, common_prefix=f.common_prefix, words_differing=f.words_differing,
                   expectations_met=f.expectations_met, expectations_total=len(f.expectations),
                   full_expectations_met=f.full_expectations_met)
        if f.full_agreement is not None:  # None: its teacher-forced pass comes later (a grid point after the line)
            out.update(full_agreement=f.full_agreement, full_nll=f.full_nll)
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


@dataclass
class AcceptanceCounts:
    """vLLM-shaped counters of one run or a pooled prompt set (module docstring: serving metrics). Add two to pool."""

    rounds: int = 0
    drafts: int = 0  # rounds that drafted (vLLM num_drafts)
    drafted: int = 0  # draft tokens (vLLM num_draft_tokens)
    accepted: int = 0  # draft tokens in the output, any tier (vLLM num_accepted_tokens)
    accepted_per_pos: list[int] = field(default_factory=list)  # vLLM num_accepted_tokens_per_pos, position 1 first
    by_tier_per_pos: dict[int, list[int]] = field(default_factory=dict)  # accepted_per_pos split by deciding tier

    def __add__(self, other: AcceptanceCounts) -> AcceptanceCounts:
        width = max(len(self.accepted_per_pos), len(other.accepted_per_pos))

        def padded(values: list[int]) -> list[int]:
            return values + [0] * (width - len(values))

        tiers = set(self.by_tier_per_pos) | set(other.by_tier_per_pos)
        return AcceptanceCounts(
            self.rounds + other.rounds, self.drafts + other.drafts, self.drafted + other.drafted,
            self.accepted + other.accepted,
            [a + b for a, b in zip(padded(self.accepted_per_pos), padded(other.accepted_per_pos), strict=True)],
            {t: [a + b for a, b in zip(padded(self.by_tier_per_pos.get(t, [])),
                                       padded(other.by_tier_per_pos.get(t, [])), strict=True)] for t in sorted(tiers)})

    @property
    def draft_acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.accepted / self.drafts if self.drafts else 1.0

    @property
    def acceptance_by_position(self) -> list[float]:
        return [n / self.drafts if self.drafts else 0.0 for n in self.accepted_per_pos]

    @property
    def drafts_per_round(self) -> float:
        return self.drafts / self.rounds if self.rounds else 0.0

    @property
    def draft_length(self) -> float:
        return self.drafted / self.drafts if self.drafts else 0.0

    def to_dict(self) -> dict:
        """The counts and every rate derived from them (rates rounded for files; counts exact)."""
        return {"rounds": self.rounds, "drafts": self.drafts, "drafted": self.drafted, "accepted": self.accepted,
                "draft_acceptance_rate": round(self.draft_acceptance_rate, 4),
                "mean_acceptance_length": round(self.mean_acceptance_length, 4),
                "drafts_per_round": round(self.drafts_per_round, 4), "draft_length": round(self.draft_length, 4),
                "acceptance_by_position": [round(r, 4) for r in self.acceptance_by_position],
                "accepted_per_pos": list(self.accepted_per_pos),
                "by_tier_per_pos": {str(t): list(v) for t, v in self.by_tier_per_pos.items()}}


def acceptance_counts(trace: Trace) -> AcceptanceCounts:
    """The serving counters of one run, read from its trace: a round's kept drafts are its first tokens (a draft is
    kept up to its first refused token), so the j-th token of a round, if accepted, was draft position j. A token
    that replaces an audited copy opens its round without being a draft, so it is not counted as a position."""
    width = max((r.drafted for r in trace.rounds), default=0)
    counts = AcceptanceCounts(rounds=len(trace.rounds), accepted_per_pos=[0] * width,
                              by_tier_per_pos={tier: [0] * width for tier in (1, 2, 3)})
    drafting = {r.index for r in trace.rounds if r.drafted}
    counts.drafts = len(drafting)
    counts.drafted = sum(r.drafted for r in trace.rounds)
    position: Counter = Counter()
    for token in trace.tokens:
        if token.round not in drafting or token.reason == Reason.AUDIT_REFUSED:
            continue
        position[token.round] += 1
        if token.outcome in ACCEPTED and position[token.round] <= width:
            counts.accepted += 1
            counts.accepted_per_pos[position[token.round] - 1] += 1
            counts.by_tier_per_pos[int(token.tier)][position[token.round] - 1] += 1
    return counts
