"""Why a run was fast or slow: the speculative-decoding break-even, as pure math and one sentence.

With a drafter that costs c full-verifier passes per draft token, gamma drafts per round, a
verification that costs v passes per round, and each draft token kept with probability alpha
(independently, the standard analysis of Leviathan et al. 2023), a round yields on average

    E[tokens / round] = (1 - alpha^(gamma+1)) / (1 - alpha)        cost / round = gamma*c + v

so the expected speed-up over plain decoding (1 pass per token) is E / (gamma*c + v). It is >= 1
only above a break-even acceptance for a given drafter cost, or below a break-even drafter cost
for a given acceptance. A trace gives this run's point: alpha from the tokens the verifiers
judged, c and v from its calls as the engine priced them, once, by the run's cost profile.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.analysis.metrics import judged_drafts, summarize
from core.decoding.cost import CostModel
from core.models.routed_layers import decoder_layers
from core.trace import Trace
from core.vocabulary import Outcome


@dataclass(frozen=True)
class Regime:
    """A labelled box on the (alpha, c) plane."""

    label: str
    alpha: tuple[float, float]
    cost: tuple[float, float]


PUBLISHED = Regime("published SD pairs (small drafter, large verifier; Leviathan et al. 2023, Chen et al. 2023)",
                   alpha=(0.6, 0.8), cost=(0.05, 0.1))
"""Where the drafter/verifier pairs of the speculative decoding papers sit: a drafter 10-20x smaller
than its verifier that agrees with it on most tokens."""


def expected_tokens(alpha: float, gamma: float) -> float:
    """E[tokens per round] = (1 - alpha^(gamma+1)) / (1 - alpha): kept drafts plus the verifier's token."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def expected_speedup(alpha: float, cost: float, gamma: float, verify: float) -> float:
    """Speed-up over plain decoding: E[tokens/round] / (gamma*c + v); unbounded when a round costs nothing (a free
    drafter whose tokens no verifier checked)."""
    spent = gamma * cost + verify
    return expected_tokens(alpha, gamma) / spent if spent > 0 else float("inf")


def break_even_alpha(cost: float, gamma: float, verify: float) -> float | None:
    """Least acceptance at which drafting pays (speed-up >= 1); None when even alpha = 1 does not."""
    if expected_speedup(1.0, cost, gamma, verify) < 1.0:
        return None
    if expected_speedup(0.0, cost, gamma, verify) >= 1.0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(60):  # speed-up rises with alpha: bisect
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_speedup(mid, cost, gamma, verify) < 1.0 else (lo, mid)
    return hi


def break_even_cost(alpha: float, gamma: float, verify: float) -> float | None:
    """Greatest drafter cost per token at which drafting pays; None when even a free drafter does not."""
    cost = (expected_tokens(alpha, gamma) - verify) / gamma
    return cost if cost >= 0 else None


@dataclass(frozen=True)
class RunPoint:
    """One run on the break-even plane, and what its numbers were made of."""

    alpha: float  # kept / (kept + refused): the per-token acceptance the formula assumes
    cost: float  # drafter units per draft token
    gamma: float  # mean draft length of the rounds that drafted (prompt lookup often drafts fewer than asked)
    configured_gamma: int
    verify: float  # verifier units (slim + full) per round that had a draft
    drafted: int
    kept: int
    refused: int
    draft_rounds: int
    direct_share: float  # share of kept drafts accepted by tier 1, with no verifier

    @property
    def speedup(self) -> float:
        return expected_speedup(self.alpha, self.cost, self.gamma, self.verify)


def run_point(trace: Trace) -> RunPoint | None:
    """The trace's (alpha, c, v) from its recorded call costs; None for a run that drafted nothing (plain).

    Refusals are the tokens a verifier regenerated or corrected; drafts discarded after a refusal
    were never judged, so alpha counts only kept and refused ones (the geometric estimate). Each
    model's prompt prefill (`CallRecord.prefill_units`) is left out (every method pays it once); rounds
    with no draft (prompt lookup found nothing) are plain steps and are left out too."""
    rounds = [r for r in trace.rounds if r.drafted]
    drafted = sum(r.drafted for r in rounds)
    if not drafted:
        return None
    kept, refused = judged_drafts(trace)  # judged on one basis (core.analysis.metrics)
    direct = sum(t.outcome == Outcome.DIRECT_ACCEPT.value for t in trace.tokens)

    def units(role: str) -> float:
        return sum(c.cost_units - c.prefill_units for r in rounds for c in r.calls if c.role == role)

    return RunPoint(alpha=kept / (kept + refused) if kept + refused else 0.0, cost=units("drafter") / drafted,
                    gamma=drafted / len(rounds), configured_gamma=trace.config.gamma,
                    verify=(units("slim") + units("full")) / len(rounds),
                    drafted=drafted, kept=kept, refused=refused, draft_rounds=len(rounds),
                    direct_share=direct / kept if kept else 0.0)


def explain(trace: Trace) -> str:
    """One sentence saying what made this run fast or slow, with the numbers that decide it."""
    point = run_point(trace)
    if trace.policy.method == "plain" or not trace.rounds:
        return "Plain decoding: one full pass per token, the baseline every speed-up is measured against."
    if point is None:
        return ("Nothing was drafted (prompt lookup found no earlier text to copy), so every token cost a full "
                "pass: no faster than plain decoding.")
    pace = point.speedup
    head = (f"Drafting cost {point.cost:.2f} of a full pass per token and {point.alpha:.0%} of drafts were kept, "
            f"with verification at {point.verify:.2f} passes per round: "
            + ("no pass at all" if pace == float("inf") else f"about {pace:.2f}x plain")
            + " in the rounds that drafted")
    needed_alpha = break_even_alpha(point.cost, point.gamma, point.verify)
    needed_cost = break_even_cost(point.alpha, point.gamma, point.verify)
    if pace >= 1.0:
        tail = (f"; it stays ahead down to {needed_alpha:.0%} kept at this cost"
                if needed_alpha is not None else "")
        tail += f", or with a drafter up to {needed_cost:.2f} at this acceptance" if needed_cost is not None else ""
    else:
        if needed_alpha is None:
            best = expected_speedup(1.0, point.cost, point.gamma, point.verify)
            tail = f": at this cost no acceptance breaks even (even 100% kept gives {best:.2f}x)"
        else:
            tail = f": break-even needs >= {needed_alpha:.0%} kept at this cost"
        tail += (f", or a drafter under {needed_cost:.2f} at this acceptance" if needed_cost is not None
                 else ", and at this acceptance even a free drafter would not pay")
    extra = (f" Tier 1 accepted {point.direct_share:.0%} of the kept drafts with no verifier."
             if point.direct_share > 0 else "")
    drafts = f"{point.gamma:.1f} drafted per round, gamma {point.configured_gamma}"
    return f"{head}{tail} ({drafts}; {trace.cost_profile} profile).{extra}"


@dataclass(frozen=True)
class Explanation:
    """Everything the app's 'why' line, break-even view and modelled card need for one run."""

    sentence: str
    point: RunPoint | None
    predicted_speedup: float  # over plain, under `profile_label`
    profile_label: str


def explain_run(trace: Trace) -> Explanation:
    """One call for a UI: the sentence, the run's point and its speed-up over plain, all read from the calls
    as the engine priced them (by the run's profile, `Trace.cost_profile`)."""
    return Explanation(sentence=explain(trace), point=run_point(trace),
                       predicted_speedup=summarize(trace)["modelled_speedup"],
                       profile_label=trace.cost_label or trace.cost_profile)


def lookup_ceiling(trace: Trace, costs: CostModel) -> float:
    """How much faster than this run a prompt-lookup decoder of the same model could possibly be.

    The oracle knows every verdict in advance: it pays the prompt's prefill, then one full pass per
    stretch of output that ends where the full model wrote a token of its own (a correction, or a
    token with no draft), covering the whole stretch, and drafts nothing that is refused. No
    drafter, threshold or audit can beat it with the same verifier; on a CPU, where a pass has a
    large fixed cost, its bound is what prompt lookup can still win over classic SD. Priced by
    `costs`; the run's own calls are priced the same way (`CostModel.calls_cost`: `costs` may be another
    profile than the run's).
    """
    full = costs.verifier
    layers = len(decoder_layers(full))
    own = {Outcome.FULL_CORRECT.value, Outcome.PLAIN.value}
    # The prefill writes token 0; each later token of the model's own is written by a pass over the stretch
    # since the previous one; one last pass checks the copies after the last (none when the answer ends on its own).
    cuts = [i for i, t in enumerate(trace.tokens) if i > 0 and t.outcome in own]
    bounds = [0, *cuts, len(trace.tokens)]
    oracle = costs.cost_units(full, layers, max(trace.prompt_token_count, 1))
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b > a and not (b == len(trace.tokens) and a == b - 1 and trace.tokens[a].outcome in own):
            oracle += costs.cost_units(full, layers, b - a)
    return costs.calls_cost(trace) / oracle if oracle else 1.0
