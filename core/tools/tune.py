"""Recommend thresholds for a fidelity target: the fastest setting whose output stays close enough.

    python -m core.tools.tune --family chat --max-words-differing 0.01
    python -m core.tools.tune --prompts my_prompts.txt --min-agreement 0.95 --json

Over a grid of (tau_accept, tau_slim, gamma, signals, routes), every tuning prompt is decoded with
the memo on (`generate(..., replay=True)`: exactly the tokens of a real run; a threshold sweep
only computes prefixes no earlier run visited) and compared with the full model's own greedy
output. Fidelity target, one of:
* `--max-words-differing x`: share of the reference's words that the output changes (core.analysis.textdiff
  when present, else a difflib word diff), pooled over prompts;
* `--min-agreement x`: share of output tokens that are the full model's argmax (core.analysis.fidelity).
Speed is the accelerator cost model's speed-up over plain decoding (core.decoding.cost), pooled over prompts
(tokens / cost units). The recommendation is the fastest grid point that meets the target on the
tuning prompts; classic SD (both thresholds 1.0) is always in the grid and is exact under greedy,
so a recommendation always exists. It is then run on held-apart prompts (per family, even-numbered
examples tune, odd-numbered evaluate), and `--measure` adds wall-clock speed-ups measured there
side by side with plain decoding. Outputs: the recommendation, the grid and its Pareto front
(CSV, JSON and a plotly HTML in --out), or one JSON object with --json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from core.analysis.fidelity import attach_fidelity
from core.analysis.metrics import measured_speedup, summarize
from core.analysis.textdiff import word_diff
from core.analysis.tradeoffs import pareto_front
from core.config import DecodeConfig
from core.decoding.engine import generate
from core.errors import ConfigError
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle
from core.tools.tune_result import SPEED, Target, TuneResult, write_outputs
from core.trace import Trace
from examples import expectations_for


def grid_configs(base: DecodeConfig, taus: list[float], gammas: list[int], signals: list[str],
                 slim_routes: list[str], stops: list[float] | None = None,
                 slim_taus: list[float] | None = None) -> list[DecodeConfig]:
    """Every ordered pair tau_slim <= tau_accept (tau_accept from `taus`, tau_slim from `slim_taus`, default the same;
    1.0 always included: it switches a tier off) x gammas x signals x routes x draft cuts (`stops`: draft_stop_below
    values; default the base's)."""
    values = sorted({round(float(t), 4) for t in taus} | {1.0})
    slim_values = sorted({round(float(t), 4) for t in (taus if slim_taus is None else slim_taus)} | {1.0})
    out = []
    for gamma, signal, route, stop in itertools.product(gammas, signals, slim_routes,
                                                         stops or [base.draft_stop_below]):
        for a, s in itertools.product(values, slim_values):
            if s <= a or (slim_taus is not None and s == 1.0):  # given tau_slims: 1.0 (tier 2 off) with any
                out.append(base.with_(mode="via", tau_accept=a, tau_slim=s, gamma=gamma, draft_signal=signal,
                                      slim_signal=signal, slim_route=route, draft_stop_below=stop).validate())
    return out


def _reference(bundle: ModelBundle, prompt: str, base: DecodeConfig, profile: object = None) -> Trace:
    return generate(bundle, prompt, base.with_(mode="plain", temperature=0.0), profile=profile)


def evaluate(bundle: ModelBundle, prompts: list[str], config: DecodeConfig,
             references: dict[str, Trace], profile: object = None) -> dict:
    """Pooled metrics of one setting over prompts: speed-up (tokens / cost units, priced by `profile`: None is the
    modelled accelerator), words differing (pooled over reference words), token agreement (pooled over output
    tokens), identical share."""
    tokens = cost = words = differing = agree_tokens = identical = 0.0
    for prompt in prompts:
        reference = references[prompt]
        trace = generate(bundle, prompt, config, profile=profile)
        attach_fidelity(bundle, trace, reference.token_ids, expectations=expectations_for(prompt))
        m = summarize(trace)
        n_words = max(len(reference.text.split()), 1)
        wd = m.get("words_differing")
        wd = word_diff(trace.text, reference.text).words_differing if wd is None else float(wd)
        tokens += m["tokens"]
        cost += m["modelled_cost"]
        words += n_words
        differing += wd * n_words
        agree_tokens += m["full_agreement"] * m["tokens"]
        identical += bool(m["identical_to_full"])
    return {SPEED: tokens / cost if cost else 0.0, "words_differing": differing / words if words else 0.0,
            "agreement": agree_tokens / tokens if tokens else 1.0, "identical_share": identical / len(prompts),
            "tokens": int(tokens)}


def _setting(config: DecodeConfig) -> dict:
    return {"tau_accept": config.tau_accept, "tau_slim": config.tau_slim, "gamma": config.gamma,
            "draft_signal": config.draft_signal, "slim_signal": config.slim_signal, "drafter": config.drafter,
            "draft_route": config.draft_route, "slim_route": config.slim_route,
            "draft_stop_below": config.draft_stop_below}


def tune(bundle: ModelBundle, prompts: list[str], target: Target, configs: list[DecodeConfig],
         on_progress: Callable[[int, int], None] | None = None,
         should_stop: Callable[[], bool] | None = None, profile: object = None) -> TuneResult:
    """Evaluate every config on `prompts`, keep the Pareto front, recommend the fastest that meets `target`."""
    if not prompts:
        raise ConfigError("tune needs at least one prompt")
    references = {p: _reference(bundle, p, configs[0], profile) for p in prompts}
    rows = []
    for done, config in enumerate(configs):
        if should_stop is not None and should_stop():
            break
        rows.append({**_setting(config), **evaluate(bundle, prompts, config, references, profile)})
        if on_progress is not None:
            on_progress(done + 1, len(configs))
    grid = pd.DataFrame(rows)
    try:
        target = target.resolved(grid)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    grid["meets_target"] = [target.met(r) for _, r in grid.iterrows()]
    feasible = grid[grid["meets_target"]]
    if feasible.empty:  # only when stopped before classic SD ran, or under sampling
        raise ConfigError(f"no setting met {target.describe()} on the tuning prompts")
    fidelity_order = feasible[target.metric] * (1 if target.metric == "words_differing" else -1)
    best = feasible.assign(_f=fidelity_order).sort_values([SPEED, "_f"], ascending=[False, True]).iloc[0]
    recommended = {k: (v.item() if hasattr(v, "item") else v) for k, v in best.drop("_f").items()}
    return TuneResult(target=target, grid=grid, front=pareto_front(grid, target.metric, SPEED), recommended=recommended)


def config_of(base: DecodeConfig, setting: dict) -> DecodeConfig:
    keys = ("tau_accept", "tau_slim", "gamma", "draft_signal", "slim_signal", "drafter", "draft_route", "slim_route",
            "draft_stop_below")
    return base.with_(mode="via", **{k: setting[k] for k in keys}).validate()


def held_apart(bundle: ModelBundle, prompts: list[str], base: DecodeConfig, setting: dict, measure: bool,
               profile: object = None) -> dict:
    """The recommendation on prompts it was not tuned on (modelled speed; measured too with `measure`)."""
    config = config_of(base, setting)
    references = {p: _reference(bundle, p, base, profile) for p in prompts}
    out = {"prompts": len(prompts), **evaluate(bundle, prompts, config, references, profile)}
    if measure:
        ratios = []
        for prompt in prompts:  # plain and the recommendation back to back, both computed for real
            plain = generate(bundle, prompt, base.with_(mode="plain"), replay=False)
            ratios.append(measured_speedup(generate(bundle, prompt, config, replay=False), plain))
        ratios = sorted(r for r in ratios if r is not None)
        out["measured_speedup_median"] = ratios[len(ratios) // 2] if ratios else None
    return out


def load_prompt_set(family: str | None, prompt_file: str | None, count: int,
                    pair: str | None = None) -> tuple[list[str], list[str]]:
    """(tuning, held-apart) prompts: from a file (one per line, alternating), the pair's calibration prompts (written
    apart from examples/, so the benchmark's stay unseen) or the example families."""
    if pair:
        from core.tools.calibrate_pair import CALIBRATION_PROMPTS

        return list(CALIBRATION_PROMPTS[0::2][:count]), list(CALIBRATION_PROMPTS[1::2][:count])
    if prompt_file:
        lines = [line.strip() for line in Path(prompt_file).read_text().splitlines() if line.strip()]
        if len(lines) < 2:
            raise ConfigError(f"{prompt_file} needs at least two prompts, one per line (tuning and held-apart)")
        return lines[0::2][:count], lines[1::2][:count]
    from examples import FAMILIES, load_prompts

    families = [family] if family else list(FAMILIES)
    if family and family not in FAMILIES:
        raise ConfigError(f"family must be one of {', '.join(FAMILIES)}, not '{family}'")
    tuning, held = [], []
    for f in families:
        prompts = load_prompts(f)
        tuning += [p.text for p in prompts[0::2][:count]]
        held += [p.text for p in prompts[1::2][:count]]
    return tuning, held


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    goal = parser.add_mutually_exclusive_group()
    goal.add_argument("--max-words-differing", type=float, help="ceiling on the share of words differing")
    goal.add_argument("--min-agreement", type=float, help="floor on token agreement with the full model")
    goal.add_argument("--max-words-over-sd", type=float, help="ceiling on words differing above classic SD's own "
                      "in the same grid (0.01: one point more than classic SD; bf16 numerics move words too)")
    parser.add_argument("--family", help="tune over one example family (default: all four)")
    parser.add_argument("--prompts", help="a text file, one prompt per line (odd lines tune, even lines evaluate)")
    parser.add_argument("--count", type=int, default=2, help="tuning (and held-apart) prompts per family or file")
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--pair", choices=["qwen2.5-coder"], help="tune the offline pair: its verifier and drafter, "
                        "bf16, drafter 'model', its calibration prompts, this device's cost profile")
    parser.add_argument("--drafter-quant", help="the pair's drafter setting (core.models.drafter_quant; default: "
                        "the preset's)")
    parser.add_argument("--copy-evidence", default="verifier", help="e.g. audit: tier-1 drafts kept on trust and "
                        "audited by the next full pass (exact in greedy)")
    parser.add_argument("--profile", help="cost profile the speed-up is priced by (default: the modelled "
                        "accelerator; with --pair this device's)")
    parser.add_argument("--drafter", default="self", choices=["self", "ngram", "model"])
    parser.add_argument("--taus", default="0.5,0.7,0.8,0.9,1.0", help="threshold values; every ordered pair is tried")
    parser.add_argument("--gammas", default="4")
    parser.add_argument("--signals", default="prob", help="confidence signals (used for both tiers)")
    parser.add_argument("--slim-routes", default="auto-slim")
    parser.add_argument("--stops", default="0", help="draft_stop_below values (a draft ends at its first token below)")
    parser.add_argument("--slim-taus", help="tau_slim values (default: --taus; 1.0 alone: tier 2 off throughout)")
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per prompt")
    parser.add_argument("--measure", action="store_true", help="also measure wall-clock speed-up on held-apart prompts")
    parser.add_argument("--out", default="artifacts/tune", help="folder for the CSV, JSON and HTML outputs")
    parser.add_argument("--json", action="store_true", help="print one JSON object (and still write --out)")
    args = parser.parse_args(argv)
    if args.min_agreement is not None:
        target = Target("agreement", args.min_agreement)
    elif args.max_words_over_sd is not None:
        target = Target("words_differing", args.max_words_over_sd, over_classic_sd=True)
    else:
        target = Target("words_differing", 0.01 if args.max_words_differing is None else args.max_words_differing)
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    start = time.perf_counter()
    tuning, held = load_prompt_set(args.family, args.prompts, args.count, args.pair)
    if args.pair:
        from core.decoding.cost_profiles import device_profile
        from core.tools.pair_bench import PAIRS

        bundle = load_bundle(*PAIRS[args.pair], dtype="bfloat16", drafter_quant=args.drafter_quant)
        args.drafter = "model"
        args.profile = device_profile(bundle.verifier.device, args.profile, bundle.verifier.dtype)
    else:
        bundle = load_bundle(args.model)
    base = DecodeConfig(drafter=args.drafter, max_new_tokens=args.tokens, copy_evidence=args.copy_evidence)
    configs = grid_configs(base, _floats(args.taus), [int(g) for g in _floats(args.gammas)],
                           [s.strip() for s in args.signals.split(",") if s.strip()],
                           [r.strip() for r in args.slim_routes.split(",") if r.strip()], _floats(args.stops),
                           _floats(args.slim_taus) if args.slim_taus else None)
    log(f"{len(configs)} settings x {len(tuning)} tuning prompts; target {target.describe()}")
    log(f"speed priced by {args.profile or 'the modelled accelerator'}" +
        (f"; drafter {bundle.drafter.label}" if bundle.drafter is not None else ""))
    result = tune(bundle, tuning, target, configs,
                  on_progress=lambda d, n: log(f"  {d}/{n} settings ({time.perf_counter() - start:.0f} s)"),
                  profile=args.profile)
    result.held_apart = (held_apart(bundle, held, base, result.recommended, args.measure, args.profile)
                         if held else {})
    paths = write_outputs(result, Path(args.out))
    summary = {**result.to_dict(), "outputs": [str(p) for p in paths],
               "tuning_prompts": len(tuning), "seconds": round(time.perf_counter() - start, 1)}
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        rec = result.recommended
        print(f"\nrecommended for {result.target.describe()}: tau_accept {rec['tau_accept']}, "
              f"tau_slim {rec['tau_slim']}, gamma {rec['gamma']}, signal {rec['draft_signal']}, "
              f"drafter {rec['drafter']} ({rec['draft_route']}), slim route {rec['slim_route']}, "
              f"draft cut below {rec['draft_stop_below']}")
        print(f"  tuning prompts:      speed-up {rec[SPEED]:.2f}x (modelled), words differing "
              f"{rec['words_differing']:.3f}, agreement {rec['agreement']:.3f}")
        if result.held_apart:
            h = result.held_apart
            measured = (f", measured {h['measured_speedup_median']:.2f}x (median)"
                        if h.get("measured_speedup_median") is not None else "")
            print(f"  held-apart prompts:  speed-up {h[SPEED]:.2f}x (modelled){measured}, words differing "
                  f"{h['words_differing']:.3f}, agreement {h['agreement']:.3f}")
        print("Pareto front:")
        print(result.front[["tau_accept", "tau_slim", "gamma", "draft_stop_below", SPEED, "words_differing",
                            "agreement"]]
              .to_string(index=False))
        print("wrote", ", ".join(str(p) for p in paths))
    return summary


if __name__ == "__main__":
    main()
