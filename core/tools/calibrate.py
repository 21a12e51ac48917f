"""Choose the slim verifier for its confident verdicts, not for its overall agreement.

    python -m core.tools.calibrate                      # embedded model, precision target 0.95, writes the preset
    python -m core.tools.calibrate --precision 0.9 --no-save --json
    python -m core.tools.calibrate --pair qwen2.5-coder  # the real pair: a mask search (core/tools/calibrate_pair.py)

What tier 2 buys. A slim pass costs c (core.decoding.cost units: one full pass = 1) and runs for every token
that reaches tier 2; where its confidence clears tau_slim it decides and the full pass is skipped.
Per token reaching tier 2 the expected saving is therefore

    net saving = coverage(tau_slim) - c      (in full-pass units; <= 0 means tier 2 costs more than it saves)

with tau_slim the lowest threshold whose precision (share of confident slim verdicts equal to the
full model's greedy choice) meets the target on the calibration text. Coverage and precision are
teacher-forced per position on the full model's own greedy outputs (core.analysis.reliability); a round
batches several tokens into one pass, which this per-token view leaves out.

Search space (each one teacher-forced pass over the calibration text per candidate):
* whole layers and, as in SWIFT, attention and MLP blocks apart (core.models.layer_routes sub-layer routes);
  blocks are ranked once by the harm of dropping each alone per unit of cost saved, then every
  prefix of that ranking is scored and the best kept;
* a restricted output vocabulary for the slim head: the first K token ids (BPE ids are roughly in
  merge, i.e. frequency, order) plus every token of the text so far; the head then costs K/V of its
  weights. Only measured here: using it in the engine needs the scorer hook below.

Calibration and evaluation prompts are kept apart: per family, even-numbered example prompts
calibrate and odd-numbered ones evaluate. The chosen route is saved as a preset JSON in
core/presets/ and resolved by name (`slim_route="calibrated-slim"`). The preset's engine-ready route
is the best whole-layer route with the whole head; the best of everything tried is recorded beside
it (`best_with_hooks`).

Hooks the engine needs before sub-layer routes and restricted heads can run there:
* cost: core.decoding.cost counts every layer in `route.layers` whole; a sub-layer route costs less
  (`route_cost` here subtracts the skipped blocks and scales the head by its vocabulary share).
* head: the scorer would take the final hidden states (`model.model(...)`), multiply by the rows
  of the output matrix for the restricted vocabulary (ids < K, the stop ids and every token of the
  prefix) and scatter them into a full-width row of -inf, so sampling, confidence and verification
  stay unchanged; K belongs in the memo key (a `LayerRoute` field would put it there).
The memo key already covers sub-layer skips (core.models.memo.memo_key reads every route field).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from core.analysis.slim_calibration import (
    Block,
    Calibrator,
    RouteScore,
    block_params,
    build_texts,
    route_from_blocks,
)
from core.models.layer_routes import (
    PRESET_DIR,
    LayerRoute,
    model_signature,
    protected_layers,
    resolve_route,
    route_to_dict,
)
from core.models.loading import EMBEDDED_ID, load_bundle
from core.models.routed_layers import decoder_layers
from core.tools import calibrate_pair
from core.tools.pair_bench import PAIRS


def split_prompts(per_family: int) -> tuple[list[str], list[str]]:
    """(calibration, evaluation): per family, even-numbered examples calibrate, odd-numbered evaluate."""
    from examples import FAMILIES, load_prompts

    calibration, evaluation = [], []
    for family in FAMILIES:
        prompts = load_prompts(family)
        calibration += [p.text for p in prompts[0::2][:per_family]]
        evaluation += [p.text for p in prompts[1::2][:per_family]]
    return calibration, evaluation


def rank_units(cal: Calibrator, sublayer: bool) -> list[list[Block]]:
    """Routable units (single blocks, or whole layers) from least to most harmful per weight saved."""
    model = cal.model
    n = len(decoder_layers(model))
    blocks = block_params(model)
    contribution = cal.block_contributions()
    protected = protected_layers(model.config.get_text_config())
    if sublayer:
        units: list[list[Block]] = [[(i, "attention")] for i in range(n) if i not in protected]
        units += [[(i, "mlp")] for i in range(n)]
    else:
        units = [[(i, "attention"), (i, "mlp")] for i in range(n) if i not in protected]
    return sorted(units, key=lambda u: sum(contribution.get(b, 0.0) for b in u) / max(sum(blocks[b] for b in u), 1))


def search(cal: Calibrator, target: float, signal: str, prefixes: list[int], sublayer: bool,
           vocab_tops: tuple[int | None, ...], log: Callable[[str], None] = print
           ) -> list[tuple[LayerRoute, RouteScore]]:
    """Score routes that drop the first k units of the ranking, for each k in `prefixes` and each head size."""
    ranked = rank_units(cal, sublayer)
    kind = "sublayer" if sublayer else "layer"
    tried: list[tuple[LayerRoute, RouteScore]] = []
    for k in prefixes:
        dropped = [b for unit in ranked[:k] for b in unit]
        route = route_from_blocks(dropped, cal.model.config, f"calibrated-{kind}-{k}")
        for score in cal.score(route, target, signal, vocab_tops):
            tried.append((route, score))
            log(f"  {kind} k={k:2d} head {score.vocab_top or 'all'}: cost {score.cost:.3f}  tau {score.tau_slim:.3f}  "
                f"coverage {score.coverage:.3f}  net {score.net_saving:+.3f}  agreement {score.agreement:.3f}")
    return tried


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help=f"the verifier (default: {EMBEDDED_ID}, or the pair's)")
    parser.add_argument("--drafter-model", help="a separate drafter: with a mask search, its coverage is reported too")
    parser.add_argument("--pair", choices=sorted(PAIRS), help="a real pair: search the slim mask (core/tools/"
                        "calibrate_pair.py), save its preset (named after the verifier: qwen2.5-coder-1.5b)")
    parser.add_argument("--search", action="store_true", help="the mask search, for --model (implied by --pair)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], help="default: bf16 with --pair")
    parser.add_argument("--random", type=int, default=8, help="mask search: random masks per budget")
    parser.add_argument("--generations", type=int, default=3, help="mask search: evolutionary rounds per budget")
    parser.add_argument("--children", type=int, default=5, help="mask search: masks bred per round")
    parser.add_argument("--texts", type=Path, help="mask search: a JSON file caching the calibration texts")
    parser.add_argument("--precision", type=float, default=0.95, help="precision target of tier 2 at tau_slim")
    parser.add_argument("--signal", default="prob", choices=["prob", "margin", "entropy"])
    parser.add_argument("--per-family", type=int, default=1, help="calibration (and evaluation) prompts per family")
    parser.add_argument("--tokens", type=int, help="greedy output tokens per prompt (default 32; search: 48)")
    parser.add_argument("--prefixes", default="1,2,3,4,6,8", help="how many ranked units to drop (one pass each)")
    parser.add_argument("--vocab-tops", default="2048,8192", help="restricted head sizes to measure")
    parser.add_argument("--no-sublayer", action="store_true", help="whole layers only")
    parser.add_argument("--no-save", action="store_true", help="do not write the preset JSON")
    parser.add_argument("--preset-name", help="default: smollm2-135m; with --pair: qwen2.5-coder-1.5b")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    command = "python -m core.tools.calibrate " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.pair or args.search:
        verifier, drafter = PAIRS.get(args.pair, (args.model, args.drafter_model))
        bundle = load_bundle(args.model or verifier, args.drafter_model or drafter, dtype=args.dtype or "bfloat16")
        name = args.preset_name or (args.model or verifier).rsplit(":", 1)[-1].rsplit("/", 1)[-1].removesuffix(
            "-instruct").lower()
        result = calibrate_pair.run(bundle, name, command, tokens=args.tokens or 48, precision=args.precision,
                                    random_count=args.random, generations=args.generations, children=args.children,
                                    sublayer=not args.no_sublayer, save=not args.no_save, texts_cache=args.texts,
                                    log=log)
        print(json.dumps(result, default=str) if args.json else "\n".join(pair_table_lines(result)))
        return result
    args.model, args.tokens = args.model or EMBEDDED_ID, args.tokens or 32
    args.preset_name = args.preset_name or "smollm2-135m"
    start = time.perf_counter()
    bundle = load_bundle(args.model)
    config = bundle.verifier.model.config
    calib_prompts, eval_prompts = split_prompts(args.per_family)
    cal = Calibrator(bundle, build_texts(bundle, calib_prompts, args.tokens))
    held = Calibrator(bundle, build_texts(bundle, eval_prompts, args.tokens))
    log(f"texts ready: {len(calib_prompts)} calibration / {len(eval_prompts)} held-apart prompts, "
        f"{len(cal.full_choice)} / {len(held.full_choice)} positions ({time.perf_counter() - start:.0f} s)")
    tops = (None, *(int(v) for v in args.vocab_tops.split(",") if v.strip()))
    prefixes = [int(v) for v in args.prefixes.split(",") if v.strip()]
    candidates: list[tuple[LayerRoute, RouteScore]] = []
    full = resolve_route("full", config)
    candidates += [(full, s) for s in cal.score(full, args.precision, args.signal, tops[1:])]
    auto = resolve_route("auto-slim", config)
    auto_scores = cal.score(auto, args.precision, args.signal, tops)
    candidates += [(auto, s) for s in auto_scores]
    for sublayer in ([False] if args.no_sublayer else [False, True]):
        candidates += search(cal, args.precision, args.signal, prefixes, sublayer, tops, log)

    def usable_now(route: LayerRoute, score: RouteScore) -> bool:  # the engine runs it without new hooks
        return score.vocab_top is None and not route.skip_attention and not route.skip_mlp and not route.is_full

    best_route, best = max(candidates, key=lambda c: c[1].net_saving)
    usable_route, usable = max((c for c in candidates if usable_now(*c)), key=lambda c: c[1].net_saving)

    def held_out(route: LayerRoute, score: RouteScore) -> dict:
        fixed = {score.vocab_top: score.tau_slim}
        (out,) = held.score(route, args.precision, args.signal, (score.vocab_top,), taus=fixed)
        return asdict(out)

    auto_score = auto_scores[0]
    beats_auto = usable.net_saving > auto_score.net_saving and usable_route.key != auto.key
    verdict = [
        f"Engine-ready (whole layers, full head): {usable_route.describe()} "
        f"{'beats' if beats_auto else 'does not beat'} auto-slim on calibration text "
        f"(net saving {usable.net_saving:+.3f} vs {auto_score.net_saving:+.3f} full passes per token at tier 2).",
        "Tier 2 pays there." if usable.net_saving > 0 else
        "Neither pays: at this precision target a slim pass costs more than the full passes it saves, "
        "so tier 2 off (tau_slim = 1.0) is cheaper.",
        f"Best of everything tried: {best.route} with head {best.vocab_top or 'all tokens'} "
        f"(net saving {best.net_saving:+.3f}; needs the scorer hooks in the calibrate docstring)."
        if (best_route.key, best.vocab_top) != (usable_route.key, None) else "",
    ]
    shipped_route, shipped = (usable_route, usable) if beats_auto else (auto, auto_score)
    result = {
        "name": args.preset_name,
        "model": model_signature(config),
        "command": command,
        "precision_target": args.precision,
        "signal": args.signal,
        "routes": {"slim": route_to_dict(shipped_route)},
        "slim": {"route": shipped_route.describe(), "tau_slim": shipped.tau_slim},
        "calibration": {"prompts": len(calib_prompts), **asdict(shipped)},
        "held_apart": {"prompts": len(eval_prompts), **held_out(shipped_route, shipped)},
        "auto_slim": {"calibration": asdict(auto_score), "held_apart": held_out(auto, auto_score)},
        "best_with_hooks": {"calibration": asdict(best), "held_apart": held_out(best_route, best)},
        "restricted_head_full_layers": [{"calibration": asdict(s), "held_apart": held_out(full, s)}
                                        for r, s in candidates if r.is_full],
        "candidates": [asdict(s) for _, s in candidates],
        "verdict": " ".join(v for v in verdict if v),
        "seconds": round(time.perf_counter() - start, 1),
    }
    if not args.no_save:
        PRESET_DIR.mkdir(exist_ok=True)
        path = Path(PRESET_DIR) / f"{args.preset_name}.json"
        path.write_text(json.dumps(result, indent=1, default=_json_default) + "\n")
        log(f"saved {path}")
    if args.json:
        print(json.dumps(result, default=_json_default))
    else:
        _print_summary(result)
    return result


def _json_default(value: object) -> object:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(type(value).__name__)


def _print_summary(result: dict) -> None:
    rows = [("shipped", result["calibration"], result["held_apart"]),
            ("auto-slim", result["auto_slim"]["calibration"], result["auto_slim"]["held_apart"]),
            ("best with hooks", result["best_with_hooks"]["calibration"], result["best_with_hooks"]["held_apart"])]
    rows += [("full layers, restricted head", r["calibration"], r["held_apart"])
             for r in result["restricted_head_full_layers"]]
    print(f"\nprecision target {result['precision_target']} ({result['signal']}); per token reaching tier 2, "
          "net saving = coverage - cost (full passes)")
    print("| slim verifier | head | cost | tau_slim | calib. coverage / precision | held-apart coverage / precision "
          "| held-apart net saving |")
    print("|---|---|---|---|---|---|---|")
    for label, c, h in rows:
        print(f"| {label}: {c['route']} | {c['vocab_top'] or 'all'} | {c['cost']:.3f} | {c['tau_slim']:.3f} | "
              f"{c['coverage']:.3f} / {c['precision']:.3f} | {h['coverage']:.3f} / {h['precision']:.3f} | "
              f"{h['net_saving']:+.3f} |")
    print(result["verdict"])


def pair_table_lines(result: dict) -> list[str]:
    """The printed comparison of `--pair`: per budget, ranked vs searched, calibration tau and held-apart numbers."""
    lines = [f"\nprecision target {result['precision_target']} (prob); held-apart: agreement, coverage and precision "
             "at the calibration tau_slim; net = coverage - cost (full passes saved per token reaching tier 2)",
             "| mask | skips | cost | margin viol. | tau_slim | agreement | coverage | precision | net |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["table"]:
        h = r["held_apart"]
        skips = r["route"].split("skips ", 1)[-1]
        objective = "–" if r["objective"] is None else f"{r['objective']:.3f}"
        lines.append(f"| {r['label']} | {skips} | {h['cost']:.3f} | {objective} | "
                     f"{r['calibration']['tau_slim']:.3f} | {h['agreement']:.3f} | {h['coverage']:.3f} | "
                     f"{h['precision']:.3f} | {h['net_saving']:+.3f} |")
    lines.append(f"shipped: {result['slim']['route']} (tau_slim {result['slim']['tau_slim']:.3f}); "
                 f"{result['seconds']:.0f} s in all")
    if "drafter" in result:
        d = result["drafter"]
        cells = "; ".join(f"{k}: coverage {v['coverage']:.2f}, precision {v['precision']:.2f}"
                          for k, v in d.items() if k.startswith("tau"))
        lines.append(f"drafter on held-apart text: agreement {d['agreement']:.3f} over {d['tokens']} tokens; {cells}")
    if "tier2_regime" in result:
        t = result["tier2_regime"]
        lines.append(f"tier 2's own tokens (held-apart positions where the drafter is under tau_accept "
                     f"{t['tau_accept']}: {t['tokens']}, {t['share']:.0%}): shipped mask agreement "
                     f"{t['agreement']:.3f}, coverage {t['coverage']:.3f}, precision {t['precision']:.3f}, "
                     f"net {t['net_saving']:+.3f}")
    return lines


if __name__ == "__main__":
    main()
