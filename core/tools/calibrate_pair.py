"""`python -m core.tools.calibrate --pair qwen2.5-coder`: a slim verifier for a real pair, found by a mask search.

Calibration text is the verifier's own greedy answers to code prompts written apart from examples/ (so the
benchmark's prompts stay unseen), teacher-forced: even-numbered prompts calibrate, odd-numbered ones are held
apart and only report. For each budget (25 / 35 / 45 % of the layers skipped) core.analysis.mask_search looks for
the whole-layer mask with the least margin violation (one teacher-forced pass of the routed verifier over the
calibration text per candidate), seeded with the block-influence ranking (1 - cosine of a layer's input and
output: FINDINGS.md's ranking). The ranked and the searched mask are then scored with the full head: tau_slim is
the lowest threshold meeting the precision target on calibration text, and agreement, coverage, precision and
net saving (coverage - cost, in full passes per token reaching tier 2) are reported on held-apart text.
"Attention and MLP apart": the best mask is refined by giving skipped layers their attention back (an MLP-only
skip costs ~88 % of a layer here) wherever that lowers the objective by at least 3 %. The mask with the best
held-apart net saving is saved as core/presets/<name>.json; `slim_route="calibrated-slim"` resolves to it by the
verifier's signature (core.config.preset("qwen2.5-coder") uses it). With a drafter, the drafter's own coverage and
precision at tau_accept candidates are reported on the same held-apart text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from core.analysis.mask_search import Mask, margin_violation, search_masks
from core.analysis.reliability import fires, signals_from_logits, teacher_forced_logits
from core.analysis.slim_calibration import Calibrator, RouteScore, Text, build_texts, route_cost, route_from_blocks
from core.models.layer_routes import (
    PRESET_DIR,
    LayerRoute,
    model_signature,
    protected_layers,
    resolve_route,
    route_from_dict,
    route_to_dict,
    with_sublayer_skips,
)
from core.models.loading import ModelBundle
from core.models.routed_layers import decoder_layers

CALIBRATION_PROMPTS = (
    "Write a Python function that merges two sorted lists into one sorted list.",
    "Write a Python function that counts the vowels in a string.",
    "Rename the function `calc` to `compute_area` and its parameter `x` to `radius`. Reply with only the code.\n\n"
    "```python\nimport math\n\n\ndef calc(x):\n    return math.pi * x ** 2\n```",
    "Write a SQL query that lists the ten most expensive products from a table products(id, name, price).",
    "Fix the bug in this function, which should return the last element of a list. Reply with only the code.\n\n"
    "```python\ndef last(items):\n    return items[len(items)]\n```",
    "Add type hints to this function. Reply with only the code.\n\n```python\ndef repeat(text, times):\n"
    "    return text * times\n```",
    "Write a JavaScript function that returns the largest number in an array.",
    "Explain in one sentence what `sorted(words, key=len)` does in Python.",
)
"""Code prompts written for calibration only (never benchmarked): even-numbered calibrate, odd-numbered report."""

BUDGETS = (25, 35, 45)


@torch.inference_mode()
def layer_influence(cal: Calibrator) -> list[int]:
    """Decoder layers from least to most influential: 1 - mean cosine of each layer's input and output."""
    scores: dict[int, list[float]] = {}
    hooks = []
    for i, layer in enumerate(decoder_layers(cal.model)):
        def hook(_module: object, args: tuple, kwargs: dict, out: object, i: int = i) -> None:
            before = args[0] if args else kwargs["hidden_states"]
            after = out[0] if isinstance(out, tuple) else out
            cosine = torch.nn.functional.cosine_similarity(before.float(), after.float(), dim=-1)
            scores.setdefault(i, []).append(float(1 - cosine.mean()))
        hooks.append(layer.register_forward_hook(hook, with_kwargs=True))
    try:
        cal.final_hidden(None)
    finally:
        for h in hooks:
            h.remove()
    return sorted(scores, key=lambda i: np.mean(scores[i]))


class MarginObjective:
    """Margin violation of a routed verifier on the calibration text, over the union of the full model's top-32
    tokens per position (a competitor outside it is rare and would only make a wrong mask look slightly better);
    one teacher-forced pass per mask."""

    def __init__(self, cal: Calibrator, margin: float = 1.5, top: int = 32) -> None:
        self.cal, self.margin = cal, margin
        weight = cal.model.get_output_embeddings().weight.detach()
        full = cal.full_hidden @ weight.float().T
        vocab = torch.unique(torch.cat([full.topk(top, dim=-1).indices.flatten(), torch.as_tensor(cal.full_choice)]))
        self.weight = weight[vocab].float()
        position = {int(t): k for k, t in enumerate(vocab.tolist())}
        self.targets = torch.tensor([position[int(t)] for t in cal.full_choice])

    def route(self, mask: Mask) -> LayerRoute:
        return route_from_blocks([(i, part) for i in mask for part in ("attention", "mlp")], self.cal.model.config,
                                 f"searched-{len(mask)}")

    def __call__(self, mask: Mask | LayerRoute) -> float:
        route = mask if isinstance(mask, LayerRoute) else self.route(mask)
        hidden = self.cal.final_hidden(route)
        return margin_violation(hidden @ self.weight.T, self.targets, self.margin)


def refine_sublayer(objective: MarginObjective, mask: Mask, gain: float = 0.03) -> LayerRoute:
    """Give skipped layers their attention back (MLP-only skips) where that lowers the objective by >= `gain`."""
    config = objective.cal.model.config
    route = objective.route(mask)
    best = objective(route)
    for layer in mask:
        mlp_only = set(route.skip_mlp) | {layer}
        whole = [i for i in route.skipped if i != layer]
        base = route_from_blocks([(i, p) for i in whole for p in ("attention", "mlp")], config, route.name)
        trial = with_sublayer_skips(base, set(route.skip_attention), mlp_only, config, f"searched-{len(mask)}-sub")
        value = objective(trial)
        if value <= best * (1 - gain):
            route, best = trial, value
    return route


def cached_texts(bundle: ModelBundle, cal_prompts: list[str], held_prompts: list[str], tokens: int,
                 path: Path | None) -> tuple[list[Text], list[Text]]:
    """The calibration and held-apart texts, from `path` when it holds them for these prompts, model and length
    (generating them is most of a run on a busy CPU), else generated (and saved to `path`)."""
    key = {"model": model_signature(bundle.verifier.model.config), "tokens": tokens,
           "calibration": cal_prompts, "held_apart": held_prompts}
    if path is not None and path.is_file():
        data = json.loads(path.read_text())
        if data.get("key") == key:
            return ([Text(s, f) for s, f in data["calibration_texts"]], [Text(s, f) for s, f in data["held_texts"]])
    cal, held = build_texts(bundle, cal_prompts, tokens), build_texts(bundle, held_prompts, tokens)
    if path is not None:
        path.write_text(json.dumps({"key": key, "calibration_texts": [[t.sequence, t.first] for t in cal],
                                    "held_texts": [[t.sequence, t.first] for t in held]}))
    return cal, held


def drafter_signals(bundle: ModelBundle, held: Calibrator) -> tuple[np.ndarray, np.ndarray]:
    """The drafter's top-1 choice and probability at every held-apart position (teacher-forced)."""
    choices, confs = [], []
    for t in held.texts:
        logits = teacher_forced_logits(bundle.drafter.model, t.sequence, t.first)
        choice, conf = signals_from_logits(logits[:, :held.vocab_size])
        choices.append(choice)
        confs.append(conf["prob"])
    return np.concatenate(choices), np.concatenate(confs)


def drafter_report(choice: np.ndarray, conf: np.ndarray, full_choice: np.ndarray,
                   taus: tuple[float, ...] = (0.9, 0.8, 0.7, 0.5)) -> dict:
    """The drafter's own top-1 agreement with the verifier on held-apart text, and coverage / precision at each
    tau_accept candidate (what tier 1 would keep, and how often rightly)."""
    agree = choice == full_choice
    out = {"agreement": float(agree.mean()), "tokens": int(len(agree))}
    for tau in taus:
        taken = fires(conf, tau)
        out[f"tau {tau}"] = {"coverage": float(taken.mean()),
                             "precision": float(agree[taken].mean()) if taken.any() else float("nan")}
    return out


def tier2_regime(held: Calibrator, route: LayerRoute, tau_slim: float, drafter_conf: np.ndarray,
                 tau_accept: float = 0.9) -> dict:
    """The shipped slim route on the held-apart positions that reach tier 2, those the drafter is under
    tau_accept on: the hard tokens. The table's coverage is over every position; this is what tier 2 meets."""
    choice, conf = signals_from_logits(held.head(held.final_hidden(route)))
    unsure = ~fires(drafter_conf, tau_accept)
    agree, taken = (choice == held.full_choice)[unsure], fires(conf["prob"], tau_slim)[unsure]
    coverage, cost = float(taken.mean()) if unsure.any() else 0.0, route_cost(held.model, route)
    return {"tau_accept": tau_accept, "tokens": int(unsure.sum()), "share": float(unsure.mean()),
            "agreement": float(agree.mean()) if unsure.any() else float("nan"), "coverage": coverage,
            "precision": float(agree[taken].mean()) if taken.any() else float("nan"), "cost": cost,
            "net_saving": coverage - cost}


def run(bundle: ModelBundle, name: str, command: str, *, tokens: int = 48, precision: float = 0.95,
        random_count: int = 8, generations: int = 3, children: int = 5, sublayer: bool = True, save: bool = True,
        vocab_tops: tuple[int, ...] = (8192, 32768),
        prompts: tuple[str, ...] = CALIBRATION_PROMPTS, texts_cache: Path | None = None,
        log: Callable[[str], None] = print) -> dict:
    """The whole pair calibration (see the module docstring); returns the preset dict (saved unless `save` is off)."""
    start = time.perf_counter()
    cal_prompts, held_prompts = list(prompts[0::2]), list(prompts[1::2])
    cal_texts, held_texts = cached_texts(bundle, cal_prompts, held_prompts, tokens, texts_cache)
    cal, held = Calibrator(bundle, cal_texts), Calibrator(bundle, held_texts)
    log(f"texts: {len(cal.full_choice)} calibration / {len(held.full_choice)} held-apart positions "
        f"({time.perf_counter() - start:.0f} s)")
    model = bundle.verifier.model
    n = len(decoder_layers(model))
    ranking = layer_influence(cal)
    # Never skipped: layer 0 (it sizes the cache), the last layer (it writes the answer) and the most influential
    # seventh of the layers (on the pair, a random mask that skipped layer 1 scored 8.8 against 0.6-0.9 for others).
    protected = protected_layers(model.config.get_text_config()) | {n - 1} | set(ranking[-max(1, n // 7):])
    pool = [i for i in range(n) if i not in protected]
    ranked_pool = [i for i in ranking if i in pool]
    log(f"block-influence ranking (least first): {', '.join(map(str, ranking))}")
    objective = MarginObjective(cal)
    rows, searched = [], {}
    for pct in BUDGETS:
        k = round(n * pct / 100)
        ranked = tuple(sorted(ranked_pool[:k]))
        t0 = time.perf_counter()
        result = search_masks(objective, pool, k, seeds=[ranked], random_count=random_count, generations=generations,
                              children=children, log=log)
        log(f"  {pct} % ({k} layers): ranked {objective(ranked):.4f}, searched {result.best.value:.4f} "
            f"({result.evaluations} masks, {time.perf_counter() - t0:.0f} s)")
        searched[pct] = (result.best.mask, result.best.value)
        for label, mask, value in (("ranked", ranked, next(s.value for s in result.scored if s.mask == ranked)),
                                   ("searched", result.best.mask, result.best.value)):
            rows.append(_score_row(cal, held, objective.route(mask), precision, f"{pct} % {label}", value))
    best = max((r for r in rows if "searched" in r["label"]), key=lambda r: r["held_apart"]["net_saving"])
    pct = int(best["label"].split()[0])
    if sublayer:
        refined = refine_sublayer(objective, searched[pct][0])
        if refined.skip_mlp:
            row = _score_row(cal, held, refined, precision, f"{pct} % searched, attention kept in "
                             f"{len(refined.skip_mlp)}", objective(refined))
            rows.append(row)
            if row["held_apart"]["net_saving"] > best["held_apart"]["net_saving"]:
                best = row
    shipped_route = route_from_dict(best["route_spec"], model.config, "shipped")
    rows += restricted_head_rows(cal, held, shipped_route, precision, vocab_tops)
    result = {"name": name, "model": model_signature(model.config), "command": command,
              "precision_target": precision, "signal": "prob", "objective": "margin violation, 1.5 nats",
              "routes": {"slim": best["route_spec"]},
              "slim": {"route": best["route"], "tau_slim": best["calibration"]["tau_slim"]},
              "calibration": {"prompts": len(cal_prompts), **best["calibration"]},
              "held_apart": {"prompts": len(held_prompts), **best["held_apart"]},
              "ranking": ranking, "table": rows, "seconds": round(time.perf_counter() - start, 1)}
    if bundle.drafter is not None:
        choice, conf = drafter_signals(bundle, held)
        result["drafter"] = drafter_report(choice, conf, held.full_choice)
        result["tier2_regime"] = tier2_regime(held, shipped_route, result["slim"]["tau_slim"], conf)
    if save:
        path = Path(PRESET_DIR) / f"{name}.json"
        path.write_text(json.dumps(result, indent=1, default=_plain) + "\n")
        log(f"saved {path}")
    return result


def restricted_head_rows(cal: Calibrator, held: Calibrator, route: LayerRoute, precision: float,
                         tops: tuple[int, ...]) -> list[dict]:
    """The lead "a restricted-vocabulary slim head", measured teacher-forced: the shipped mask and the full layers
    with a head over ids < K plus the prompt's tokens and the stop tokens (cost modelled by weights read). Never
    shipped: the engine has no restricted-head hook, so these rows answer only whether one would pay."""
    tops = tuple(t for t in tops if t < cal.vocab_size)  # a head as wide as the vocabulary restricts nothing
    if not tops:
        return []
    scored = {}
    for base, label in ((route, "shipped mask"), (resolve_route("full", cal.model.config), "all layers")):
        fitted = cal.score(base, precision, "prob", tops)  # one pass over the texts serves every head size
        held_out = held.score(base, precision, "prob", tops, taus={s.vocab_top: s.tau_slim for s in fitted})
        scored[label] = (base, fitted, held_out)
    return [{"label": f"{label}, head {top} (not in the engine)", "route": base.describe(),
             "route_spec": route_to_dict(base), "objective": None, "vocab_top": top,
             "calibration": _rounded(fitted[k]), "held_apart": _rounded(held_out[k])}
            for k, top in enumerate(tops) for label, (base, fitted, held_out) in scored.items()]


def _score_row(cal: Calibrator, held: Calibrator, route: LayerRoute, precision: float, label: str,
               objective: float) -> dict:
    (score,) = cal.score(route, precision, "prob")
    (out,) = held.score(route, precision, "prob", taus={None: score.tau_slim})
    return {"label": label, "route": route.describe(), "route_spec": route_to_dict(route), "objective": objective,
            "calibration": _rounded(score), "held_apart": _rounded(out)}


def _rounded(score: RouteScore) -> dict:
    data = asdict(score)
    data.pop("route_spec", None)
    return {k: round(float(v), 4) if isinstance(v, (float, np.floating)) else v for k, v in data.items()}


def _plain(value: object) -> object:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(type(value).__name__)
