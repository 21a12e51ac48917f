"""Recommend thresholds for a fidelity target over your prompts, for your pair: the fastest setting whose output
stays close enough, chosen on one half of the prompts and reported on the other; `--export` takes it to a server.

    python -m core.tools.tune --family chat --max-words-differing 0.01
    python -m core.tools.tune --prompts my_prompts.txt --min-agreement 0.95 --json
    python -m core.tools.tune --prompts examples/tune_prompts.jsonl --export tuned.json
    python -m core.tools.tune --model VERIFIER --drafter-model DRAFTER --prompts my.jsonl --export tuned.json

`--model` / `--drafter-model`: Hub ids or local folders, as `core.models.loading.load_bundle` resolves them (a Hub id
on a machine without the network fails with one line). `--prompts FILE`: one prompt per line, or JSONL
(`{"prompt": ..., "must": [...], "must_not": [...]}` per line; core/prompt_sets.py); odd-numbered prompts tune,
even-numbered ones are held apart. Fidelity target, one of:
* `--max-words-differing x`: share of the reference's words that the output changes, pooled over prompts;
* `--min-agreement x`: share of output tokens that are the full model's argmax (core.analysis.fidelity);
* `--max-words-over-sd x`: words differing above classic SD's own in the same grid.
The grid, its evaluation and the pick are core.analysis.tuning's; `--measure` adds wall-clock speed-ups measured on
the held-apart half. Outputs: the recommendation, the grid and its Pareto front (CSV, JSON and a plotly HTML in
--out), one JSON object with --json, and with `--export FILE.json` the tuned setting for transformers, vLLM and SGLang
(core.analysis.serving_export). A bad file, model or setting ends with one `error:` line and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from core.analysis.serving_export import build_export
from core.analysis.tuning import SPEED, Target, TuneResult, grid_configs, held_apart, tune
from core.config import DecodeConfig
from core.errors import ConfigError, ViaSdError
from core.models.loading import EMBEDDED_ID, load_bundle
from core.prompt_sets import SetPrompt, halves, read_prompt_set
from core.tools.tune_result import write_outputs


def load_prompt_set(family: str | None, prompt_file: str | None, count: int,
                    pair: str | None = None) -> tuple[list[SetPrompt], list[SetPrompt]]:
    """(tuning, held-apart) prompts with their expectations: from a file (core.prompt_sets: text or JSONL,
    alternating), the pair's calibration prompts (written apart from examples/, so the benchmark's stay unseen) or
    the example families."""
    if pair:
        from core.tools.calibrate_pair import CALIBRATION_PROMPTS

        return halves([SetPrompt(p) for p in CALIBRATION_PROMPTS], count)
    if prompt_file:
        return halves(read_prompt_set(prompt_file), count, prompt_file)
    from examples import FAMILIES, load_prompts

    families = [family] if family else list(FAMILIES)
    if family and family not in FAMILIES:
        raise ConfigError(f"family must be one of {', '.join(FAMILIES)}, not '{family}'")
    tuning, held = [], []
    for f in families:
        prompts = [SetPrompt(p.text, p.expectations) for p in load_prompts(f)]
        one, other = halves(prompts, count)
        tuning += one
        held += other
    return tuning, held


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m core.tools.tune", description=__doc__.split("\n\n")[0])
    goal = p.add_mutually_exclusive_group()
    goal.add_argument("--max-words-differing", type=float, help="ceiling on the share of words differing")
    goal.add_argument("--min-agreement", type=float, help="floor on token agreement with the full model")
    goal.add_argument("--max-words-over-sd", type=float, help="ceiling on words differing above classic SD's own "
                      "in the same grid (0.01: one point more than classic SD; bf16 numerics move words too)")
    p.add_argument("--family", help="tune over one example family (default: all of them)")
    p.add_argument("--prompts", help="a prompt file: one prompt per line, or JSONL {\"prompt\", \"must\", "
                   "\"must_not\"} (odd-numbered prompts tune, even-numbered ones are held apart)")
    p.add_argument("--count", type=int, default=2, help="tuning (and held-apart) prompts per family or file")
    p.add_argument("--model", default=EMBEDDED_ID, help="the verifier: an embedded name, a Hub id or a local folder")
    p.add_argument("--drafter-model", help="a separate drafter (Hub id or local folder, same tokenizer); implies "
                   "--drafter model")
    p.add_argument("--pair", choices=["qwen2.5-coder"], help="tune the offline pair: its verifier and drafter, "
                   "bf16, drafter 'model', its calibration prompts, this device's cost profile")
    p.add_argument("--drafter-quant", help="the drafter setting (core.models.drafter_quant; default: the preset's)")
    p.add_argument("--copy-evidence", default="verifier", help="e.g. audit: tier-1 drafts kept on trust and "
                   "audited by the next full pass (exact in greedy)")
    p.add_argument("--profile", help="cost profile the speed-up is priced by (default: the modelled "
                   "accelerator; with --pair this device's)")
    p.add_argument("--drafter", choices=["self", "ngram", "model"], help="default: model with a drafter model, "
                   "else self")
    p.add_argument("--taus", default="0.5,0.7,0.8,0.9,1.0", help="threshold values; every ordered pair is tried")
    p.add_argument("--gammas", default="4")
    p.add_argument("--signals", default="prob", help="confidence signals (used for both tiers)")
    p.add_argument("--slim-routes", default="auto-slim")
    p.add_argument("--stops", default="0", help="draft_stop_below values (a draft ends at its first token below)")
    p.add_argument("--slim-taus", help="tau_slim values (default: --taus; 1.0 alone: tier 2 off throughout)")
    p.add_argument("--tokens", type=int, default=32, help="new tokens per prompt")
    p.add_argument("--measure", action="store_true", help="also measure wall-clock speed-up on held-apart prompts")
    p.add_argument("--out", default="artifacts/tune", help="folder for the CSV, JSON and HTML outputs")
    p.add_argument("--export", help="write the tuned setting for transformers, vLLM and SGLang to this JSON file")
    p.add_argument("--json", action="store_true", help="print one JSON object (and still write --out)")
    return p


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"cannot read the numbers '{text[:40]}': write them like 0.5,0.8,1.0") from None


def _target(args: argparse.Namespace) -> Target:
    if args.min_agreement is not None:
        return Target("agreement", args.min_agreement)
    if args.max_words_over_sd is not None:
        return Target("words_differing", args.max_words_over_sd, over_classic_sd=True)
    return Target("words_differing", 0.01 if args.max_words_differing is None else args.max_words_differing)


def run(args: argparse.Namespace) -> dict:
    """The whole command; raises ViaSdError (one line) on a bad file, model or setting."""
    target = _target(args)
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    start = time.perf_counter()
    tuning, held = load_prompt_set(args.family, args.prompts, args.count, args.pair)
    expectations = {p.text: p.expectations for p in tuning + held}
    if args.pair:
        from core.decoding.cost_profiles import device_profile
        from core.tools.pair_bench import PAIRS

        bundle = load_bundle(*PAIRS[args.pair], dtype="bfloat16", drafter_quant=args.drafter_quant)
        args.drafter = "model"
        args.profile = device_profile(bundle.verifier.device, args.profile, bundle.verifier.dtype)
    else:
        bundle = load_bundle(args.model, args.drafter_model, drafter_quant=args.drafter_quant)
    drafter = args.drafter or ("model" if bundle.drafter is not None else "self")
    if drafter == "model" and bundle.drafter is None:
        raise ConfigError("--drafter model needs --drafter-model (a Hub id or a local folder)")
    base = DecodeConfig(drafter=drafter, max_new_tokens=args.tokens, copy_evidence=args.copy_evidence).validate()
    configs = grid_configs(base, _floats(args.taus), [int(g) for g in _floats(args.gammas)],
                           [s.strip() for s in args.signals.split(",") if s.strip()],
                           [r.strip() for r in args.slim_routes.split(",") if r.strip()], _floats(args.stops),
                           _floats(args.slim_taus) if args.slim_taus else None)
    log(f"{len(configs)} settings x {len(tuning)} tuning prompts ({len(held)} held apart); target {target.describe()}")
    log(f"speed priced by {args.profile or 'the modelled accelerator'}" +
        (f"; drafter {bundle.drafter.label}" if bundle.drafter is not None else ""))
    texts = [p.text for p in tuning]
    result = tune(bundle, texts, target, configs, profile=args.profile, expectations=expectations,
                  on_progress=lambda d, n: log(f"  {d}/{n} settings ({time.perf_counter() - start:.0f} s)"))
    result.held_apart = held_apart(bundle, [p.text for p in held], base, result.recommended, args.measure,
                                   args.profile, expectations)
    paths = write_outputs(result, Path(args.out))
    if args.export:
        export = build_export(result, bundle, base, len(tuning))
        Path(args.export).parent.mkdir(parents=True, exist_ok=True)
        Path(args.export).write_text(json.dumps(export, indent=1, default=str) + "\n")
        paths.append(Path(args.export))
    summary = {**result.to_dict(), "outputs": [str(p) for p in paths],
               "tuning_prompts": len(tuning), "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(summary, default=str) if args.json else report(result, paths))
    return summary


def report(result: TuneResult, paths: list[Path]) -> str:
    """The recommendation, both halves' figures and the Pareto front, as text."""
    rec, h = result.recommended, result.held_apart
    lines = [f"\nrecommended for {result.target.describe()}: tau_accept {rec['tau_accept']}, tau_slim "
             f"{rec['tau_slim']}, gamma {rec['gamma']}, signal {rec['draft_signal']}, drafter {rec['drafter']} "
             f"({rec['draft_route']}), slim route {rec['slim_route']}, draft cut below {rec['draft_stop_below']}"]
    for name, row in (("tuning half", rec), ("held-apart half", h)):
        if not row:
            continue
        measured = (f", measured {row['measured_speedup_median']:.2f}x (median)"
                    if row.get("measured_speedup_median") is not None else "")
        positions = ", ".join(f"{r:.2f}" for r in row["serving"]["acceptance_by_position"])
        lines.append(f"  {name + ':':17s}speed-up {row[SPEED]:.2f}x (modelled){measured}, words differing "
                     f"{row['words_differing']:.3f}, agreement {row['agreement']:.3f}; mean acceptance length "
                     f"{row['mean_acceptance_length']:.2f}, acceptance by position [{positions}]")
    lines.append("Pareto front:")
    lines.append(result.front[["tau_accept", "tau_slim", "gamma", "draft_stop_below", SPEED, "words_differing",
                               "agreement"]].to_string(index=False))
    lines.append("wrote " + ", ".join(str(p) for p in paths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except ViaSdError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
