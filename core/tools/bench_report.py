"""The printed table of `python -m core.tools.benchmark` (grounded and model-drafter runs): rows, medians, targets."""

from __future__ import annotations

import statistics

from core.analysis.breakeven import explain, lookup_ceiling
from core.decoding.cost import CostModel
from core.tools.bench_rows import HF_ASSISTED, HF_GREEDY, HF_LOOKUP, SAME_DRAFTS, Row

HEADER = (f"{'prompt':17}{'method':22}{'tok/s':>7}{'x HF gr.':>9}{'x HF lk.':>9}{'meas. x':>9}{'pred. x':>9}"
          f"{'accel. x':>9}{'words':>7}{'expect.':>9}{'same':>6}")


def _fmt(value: float | None, spec: str, width: int) -> str:
    return (format(value, spec) if value is not None else "-").rjust(width)


def format_row(row: Row, reference: list[int]) -> str:
    method = row.key if row.method not in (HF_LOOKUP, HF_ASSISTED) else row.method
    expect = f"{row.expectations[0]}/{row.expectations[1]}" if row.expectations else "-"
    return (f"{row.prompt[:16]:17}{method:22}{row.tokens_per_s:7.1f}{_fmt(row.ratios.get(HF_GREEDY), '.2f', 9)}"
            f"{_fmt(row.ratios.get(HF_LOOKUP), '.2f', 9)}{_fmt(row.ratios.get('plain'), '.2f', 9)}"
            f"{_fmt(row.predicted, '.2f', 9)}{_fmt(row.accelerator, '.2f', 9)}"
            f"{_fmt(row.words_differing, '.1%', 7)}{expect:>9}{'yes' if row.token_ids == reference else 'no':>6}")


def summary(rows: list[Row], costs: CostModel | None = None) -> list[str]:
    """Medians over prompts per method, the issue's targets, the prompt-lookup ceiling (with `costs`) and
    the profile's prediction error."""
    lines = [f"\nmedians over prompts{'':7}{'x HF gr.':>9}{'x HF lk.':>9}{'meas. x':>9}{'pred. x':>9}"
             f"{'words':>7}{'expect. kept':>13}"]
    keys = list(dict.fromkeys(r.key for r in rows))
    med: dict[str, dict[str, float | None]] = {}
    for key in keys:
        mine = [r for r in rows if r.key == key]

        def median(values: list[float | None]) -> float | None:  # "-" unless every prompt has the value
            return statistics.median(values) if values and None not in values else None

        med[key] = {"greedy": median([r.ratios.get(HF_GREEDY) for r in mine]),
                    "lookup": median([r.ratios.get(HF_LOOKUP) for r in mine]),
                    "plain": median([r.ratios.get("plain") for r in mine]),
                    "pred": median([r.predicted for r in mine]),
                    "words": median([r.words_differing for r in mine])}
        judged = [r for r in mine if r.kept_full_expectations is not None]
        met = f"{sum(r.kept_full_expectations for r in judged)}/{len(judged)}" if judged else "-"
        m = med[key]
        lines.append(f"  {key:25}{_fmt(m['greedy'], '.2f', 9)}{_fmt(m['lookup'], '.2f', 9)}"
                     f"{_fmt(m['plain'], '.2f', 9)}{_fmt(m['pred'], '.2f', 9)}{_fmt(m['words'], '.1%', 7)}{met:>13}")
    lines.append("\ntargets (README, medians over prompts):")
    for key, anchor, col in (("plain", "HF greedy", "greedy"), ("SD ngram", "HF prompt lookup", "lookup"),
                             ("VIA-SD ngram", "HF prompt lookup (target 1.2x, <= 1% words)", "lookup")):
        value = med.get(key, {}).get(col)
        goal = 1.2 if key == "VIA-SD ngram" else 1.0
        if value is not None:
            verdict = "met" if value >= goal else f"MISSED by {goal - value:.3f}"
            lines.append(f"  {key} vs {anchor}: {value:.3f}x -> {verdict}")
    via, twin = med.get("VIA-SD ngram"), med.get(f"{SAME_DRAFTS} ngram")
    if via and twin and via.get("plain") and twin.get("plain"):
        ratio = via["plain"] / twin["plain"]
        words = via.get("words")
        lines.append(f"  VIA-SD ngram words differing (median): {_fmt(words, '.1%', 0).strip()} -> "
                     f"{'met' if words is not None and words <= 0.01 else 'MISSED'}")
        lines.append(f"  floor: VIA-SD ngram vs {SAME_DRAFTS} ngram (same drafter, lossless): {ratio:.3f}x -> "
                     f"{'met' if ratio >= 1.0 else f'MISSED by {1.0 - ratio:.3f}'}")
    sd = [r for r in rows if r.key == "SD ngram" and r.trace is not None and r.ratios.get(HF_LOOKUP)]
    if costs is not None and sd:
        ceilings = [lookup_ceiling(r.trace, costs) for r in sd]
        versus_hf = [c * r.ratios[HF_LOOKUP] for c, r in zip(ceilings, sd, strict=True)]
        lines.append("  ceiling (core.analysis.breakeven.lookup_ceiling, priced by the profile): a prompt-lookup "
                     "decoder that "
                     f"knew every verdict in advance would run at most {statistics.median(ceilings):.2f}x our "
                     f"classic SD (median; {min(ceilings):.2f}-{max(ceilings):.2f}), i.e. about "
                     f"{statistics.median(versus_hf):.2f}x HF prompt lookup")
    errors = [abs(r.predicted / r.ratios["plain"] - 1) for r in rows
              if r.trace is not None and r.method != "plain" and r.predicted and r.ratios.get("plain")]
    if errors:
        worst = max(errors)
        lines.append(f"\nprofile prediction vs measured speed-up over our plain: median error "
                     f"{statistics.median(errors):.0%}, worst {worst:.0%} over {len(errors)} runs "
                     f"({'within' if statistics.median(errors) <= 0.15 else 'OUTSIDE'} the 15 % target)")
    return lines


def call_shape(rows: list[Row], costs: CostModel) -> list[str]:
    """Does the profile's law have the right shape on this run's own passes? Measured / predicted time per
    kind of call, relative to one-token full passes (1.00 everywhere = the law prices calls in the right
    proportions, whatever the machine's load did to absolute times)."""
    if costs.profile.kind != "measured" or costs.profile_note:
        return []
    buckets: dict[str, list[float]] = {}
    for row in rows:
        if row.trace is None:
            continue
        for round_ in row.trace.rounds:
            for c in round_.calls:
                if c.from_memo or c.wall_s <= 0 or (row.drafter == "model" and c.role == "drafter"):
                    continue
                size = "1 token" if c.tokens_processed == 1 else "2-16" if c.tokens_processed <= 16 else ">16"
                predicted = costs.costs(costs.verifier).time(c.layers, c.tokens_processed)
                buckets.setdefault(f"{c.role} {size}", []).append(c.wall_s / predicted)
    base = statistics.median(buckets.get("full 1 token", [1.0]))
    cells = [f"{k} {statistics.median(v) / base:.2f} (n={len(v)})" for k, v in sorted(buckets.items())]
    return ["\nprofile shape on this run's passes (measured/predicted, relative to full 1-token passes; "
            f"those ran {base:.2f}x the profile's time):", "  " + "; ".join(cells)]


def explanations(rows: list[Row], costs: CostModel) -> list[str]:
    lines = ["\nwhy (first prompt, core.analysis.breakeven, priced by the profile):"]
    first = rows[0].prompt
    for row in rows:
        if row.prompt == first and row.trace is not None and row.method != "plain":
            lines.append(f"  {row.key}: {explain(row.trace)}")
    return lines


