"""`python -m app.tools.line_bench`: a run's τ_accept line, its notches one after another against side by side.

What the background does after a visitor's run (app.prefetch), without the browser: the run (the memo and KV pool
it leaves), then the other notches of its τ_accept line, computed one after another (`generate` each, as before
core/sweeps/together.py) or side by side (`generate_together`, passes shared), each mode on a fresh memo, in
turn. Prints a table: T, the line in seconds and in T, whether every point gave the same text both ways, and the
largest difference of a recorded confidence (batch rounding in reduced precision; 0 in exact arithmetic). Hold the
heavy-work lock and run it on a quiet machine; it loads the pair (`--opening`) or the verifier alone.
"""

from __future__ import annotations

import argparse
import os
import time

from app import recorded
from app.tools.own_prompt import PROMPTS, cpu_class, settings_for
from core import generate
from core.config import DecodeConfig
from core.models.loading import ModelBundle, load_bundle
from core.sweeps.grid import Point, default_grid
from core.sweeps.together import generate_together
from core.trace import Trace


def _confidence_gap(a: Trace, b: Trace) -> float:
    """The largest difference of a recorded confidence between two runs of one point (over their common tokens)."""
    gaps = [abs(x - y) for s, t in zip(a.tokens, b.tokens, strict=False)
            for x, y in ((s.draft_confidence, t.draft_confidence), (s.full_confidence, t.full_confidence))
            if x is not None and y is not None]
    return max(gaps, default=0.0)


def measure(base: ModelBundle, prompt: str, config: DecodeConfig) -> dict:
    """Both modes on a fresh memo each: the run, then its line's other notches."""
    row: dict = {}
    traces: dict[str, list[Trace]] = {}
    for mode in ("one after another", "side by side"):
        bundle = ModelBundle(verifier=base.verifier, drafter=base.drafter)
        started = time.perf_counter()
        generate(bundle, prompt, config)
        run_s = time.perf_counter() - started
        configs = [p.apply(config) for p in default_grid(config).line(Point.of(config)) if p != Point.of(config)]
        started = time.perf_counter()
        if mode == "side by side":
            traces[mode] = generate_together(bundle, prompt, configs)
        else:
            traces[mode] = [generate(bundle, prompt, c) for c in configs]
        row[mode] = (run_s, time.perf_counter() - started)
    pairs = list(zip(*traces.values(), strict=True))
    row["same text"] = f"{sum(a.text == b.text for a, b in pairs)} of {len(pairs)}"
    row["gap"] = max(_confidence_gap(a, b) for a, b in pairs)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opening", action="store_true", help="the opening screen's pair and settings (96 tokens)")
    parser.add_argument("--tokens", type=int, default=None, help="new tokens (default: 96 with --opening, else 48)")
    parser.add_argument("--only", default="", help="the prompts whose family contains this")
    args = parser.parse_args()
    if args.opening:
        grid = recorded.load(recorded.PRESETS["opening"])
        verifier, drafter, quant = recorded.models_named(grid.recorded)
        base = load_bundle(verifier, drafter, drafter_quant=quant or None)
        config_of = lambda prompt: grid.config.with_(max_new_tokens=args.tokens or 96)  # noqa: E731
    else:
        base = load_bundle("embedded:qwen2.5-coder-1.5b-instruct")
        config_of = lambda prompt: settings_for(prompt, args.tokens or 48).config()  # noqa: E731
    before = os.getloadavg()[0]
    print("| prompt | T one after another / side by side (s) | line one after another | line side by side | "
          "same text | largest confidence gap |\n|---|---|---|---|---|---|")
    for label, prompt in PROMPTS.items():
        if args.only not in label:
            continue
        row = measure(base, prompt, config_of(prompt))
        (t1, line1), (t2, line2) = row["one after another"], row["side by side"]
        print(f"| {label} | {t1:.1f} / {t2:.1f} | {line1:.1f} s = {line1 / t1:.2f} T | {line2:.1f} s = "
              f"{line2 / t2:.2f} T | {row['same text']} | {row['gap']:.4f} |", flush=True)
    print(f"\n{'the opening pair' if args.opening else 'the verifier alone, self-drafter'}, {base.verifier.dtype}; "
          f"CPU: {cpu_class()}; load average {before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
