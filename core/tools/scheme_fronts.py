"""`python -m core.tools.scheme_fronts --family summarisation`: VIA-SD, BiLD and the cascades on the same prompts,
printed as Pareto fronts and a table of which scheme dominates within each difference budget."""

from __future__ import annotations

import argparse

import pandas as pd

from core.analysis.tradeoffs import SCHEMES, dominance_table, pareto_fronts, scheme_points, sweep_schemes
from core.config import DecodeConfig
from core.models.loading import EMBEDDED_ID, load_bundle
from examples import FAMILIES, load_prompts


def _markdown(table: pd.DataFrame) -> str:
    """A pandas table as a GitHub markdown table (no optional dependency)."""
    def cell(value: object) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return "-"
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """`python -m core.tools.scheme_fronts --family summarisation`: scheme fronts, who dominates where, per family."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--family", default="summarisation", help="a family, a comma list, or 'all'")
    parser.add_argument("--per-family", type=int, default=2, help="prompts per family (the first n)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--drafter", default="self", choices=["self", "model", "ngram"])
    parser.add_argument("--gamma", type=int, default=DecodeConfig.gamma)
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--csv", help="write every (scheme, setting, prompt) row to this CSV file")
    args = parser.parse_args(argv)
    families = FAMILIES if args.family == "all" else tuple(args.family.split(","))
    schemes = tuple(args.schemes.split(","))
    base = DecodeConfig(drafter=args.drafter, gamma=args.gamma, max_new_tokens=args.max_new_tokens)
    bundle = load_bundle(args.model)
    print(f"model {args.model}; drafter {args.drafter}, gamma {args.gamma}, {args.max_new_tokens} new tokens, "
          f"greedy; first {args.per_family} prompts per family; speed-up modelled (core/decoding/cost.py), "
          "difference measured against the full model's own greedy output")
    everything = []
    for family in families:
        prompts = [p.text for p in load_prompts(family)[: args.per_family]]
        rows = sweep_schemes(bundle, prompts, base, schemes,
                             on_progress=lambda d, t: print(f"  {d}/{t} runs", end="\r", flush=True))
        rows.insert(0, "family", family)
        everything.append(rows)
        points = scheme_points(rows)
        measure = rows["difference_measure"].iloc[0]
        print(f"\n### {family} ({len(prompts)} prompts; x = mean {measure}, y = mean modelled speed-up)\n")
        print(_markdown(dominance_table(points)))
        print("\nPareto fronts (setting: differing, speed-up):")
        for scheme, front in pareto_fronts(points).items():
            steps = "; ".join(f"{s} {d:.3f}, {x:.2f}x" for s, d, x in
                              zip(front["setting"], front["words_differing"], front["modelled_speedup"], strict=True))
            print(f"- {scheme}: {steps}")
    if args.csv:
        pd.concat(everything).to_csv(args.csv, index=False)
        print(f"\nrows written to {args.csv}")


if __name__ == "__main__":
    main()
