"""`python -m core.benchmark`: plain vs classic SD vs VIA-SD on example prompts, as one printed table.

Each prompt runs all three modes back to back with every pass executed for real (no memo), so the
measured speed-ups are ratios taken side by side on the same machine in the same minute. The
modelled accelerator speed-up (core.cost) is printed beside them and labelled as modelled.
"""

from __future__ import annotations

import argparse
import statistics

from core.config import DecodeConfig
from core.metrics import measured_speedup, summarize
from core.models import EMBEDDED_ID, load_bundle
from core.sweep import compare


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--families", default="chat,code,math,summarisation")
    parser.add_argument("--per-family", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--drafters", default="self,ngram")
    parser.add_argument("--tau-accept", type=float, default=DecodeConfig.tau_accept)
    parser.add_argument("--tau-slim", type=float, default=DecodeConfig.tau_slim)
    parser.add_argument("--gamma", type=int, default=DecodeConfig.gamma)
    args = parser.parse_args(argv)
    from examples import load_prompts

    bundle = load_bundle(args.model)
    print(f"model {args.model} on {bundle.verifier.device} ({bundle.verifier.dtype}); "
          f"tau_accept={args.tau_accept} tau_slim={args.tau_slim} gamma={args.gamma} "
          f"max_new_tokens={args.max_new_tokens}")
    header = (f"{'prompt':17}{'drafter':8}{'mode':6}{'tok/s':>8}{'meas. x':>9}{'model. x':>10}"
              f"{'reject':>8}{'acc.len':>8}{'full/tok':>9}{'agree':>7}{'same':>6}")
    print(header)
    print("-" * len(header))
    summary: dict[tuple[str, str], list[float]] = {}
    for family in args.families.split(","):
        for prompt in load_prompts(family)[: args.per_family]:
            for drafter in args.drafters.split(","):
                config = DecodeConfig(drafter=drafter, gamma=args.gamma, tau_accept=args.tau_accept,
                                      tau_slim=args.tau_slim, max_new_tokens=args.max_new_tokens)
                traces = compare(bundle, prompt.text, config, replay=False)
                for mode, trace in traces.items():
                    if mode == "plain" and drafter != args.drafters.split(",")[0]:
                        continue
                    m = summarize(trace)
                    measured = measured_speedup(trace, traces["plain"]) or 0.0
                    summary.setdefault((drafter if mode != "plain" else "-", mode), []).append(measured)
                    print(f"{family + ' ' + str(prompt.index + 1):17}{drafter if mode != 'plain' else '-':8}"
                          f"{mode:6}{m['tokens_per_s']:8.1f}{measured:8.2f}x{m['modelled_speedup']:9.2f}x"
                          f"{m['rejection_rate']:8.2f}{m['mean_accepted_length']:8.2f}"
                          f"{m['full_calls_per_token']:9.2f}{m['full_agreement']:7.2f}"
                          f"{'yes' if m['identical_to_full'] else 'no':>6}", flush=True)
    print("\nmedian measured speed-up over plain (this machine):")
    for (drafter, mode), values in summary.items():
        print(f"  {mode:6}{drafter:8}{statistics.median(values):.2f}x over {len(values)} prompts")
    print("meas. x = wall clock, side by side in this run; model. x = accelerator cost model (core/cost.py)")


if __name__ == "__main__":
    main()
