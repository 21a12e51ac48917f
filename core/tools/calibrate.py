"""Choose the slim verifier for its confident verdicts, not for its overall agreement.

    python -m core.calibrate                      # embedded model, precision target 0.95, writes the preset
    python -m core.calibrate --precision 0.9 --no-save --json

What tier 2 buys. A slim pass costs c (core.decoding.cost units: one full pass = 1) and runs for every token
that reaches tier 2; where its confidence clears tau_slim it decides and the full pass is skipped.
Per token reaching tier 2 the expected saving is therefore

    net saving = coverage(tau_slim) - c      (in full-pass units; <= 0 means tier 2 costs more than it saves)

with tau_slim the lowest threshold whose precision (share of confident slim verdicts equal to the
full model's greedy choice) meets the target on the calibration text. Coverage and precision are
teacher-forced per position on the full model's own greedy outputs (core.analysis.reliability); a round
batches several tokens into one pass, which this per-token view leaves out.

Search space (each one teacher-forced pass over the calibration text per candidate):
* whole layers and, as in SWIFT, attention and MLP blocks apart (core.decoding.layer_routes sub-layer routes);
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
The memo key already covers sub-layer skips (core.decoding.memo.memo_key reads every route field).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from core.analysis.reliability import fires, lowest_threshold_for_precision, signals_from_logits
from core.config import DecodeConfig
from core.decoding.engine import generate
from core.decoding.layer_routes import (
    PRESET_DIR,
    LayerRoute,
    model_signature,
    protected_layers,
    resolve_route,
    route_to_dict,
    with_sublayer_skips,
)
from core.decoding.routed_layers import decoder_layers, routed
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle
from core.models.prompting import encode_prompt, stop_token_ids

Block = tuple[int, str]
"""One routable unit: (layer index, "attention" | "mlp")."""


@dataclass
class Text:
    """One calibration or evaluation text: prompt + the full model's greedy output."""

    sequence: list[int]
    first: int  # index of the first output token


@dataclass
class RouteScore:
    """How a slim route (and head) does as tier 2 at the precision target."""

    route: str
    cost: float  # modelled units per slim call
    tau_slim: float  # lowest threshold meeting the precision target on the calibration text (1.0: none)
    coverage: float  # share of positions whose slim confidence clears tau_slim
    precision: float  # share of those where the slim choice equals the full model's
    agreement: float  # overall top-1 agreement with the full model
    net_saving: float  # coverage - cost: full passes saved per token reaching tier 2
    vocab_top: int | None = None  # restricted head size (None: the whole vocabulary)
    tokens: int = 0
    route_spec: dict | None = None  # core.decoding.layer_routes.route_to_dict of the route


def _params(module: torch.nn.Module | None) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def block_params(model: torch.nn.Module) -> dict[Block, int]:
    """Weights of each layer's attention and MLP block (norms are negligible and left out)."""
    out: dict[Block, int] = {}
    for i, routed_layer in enumerate(decoder_layers(model)):
        layer = getattr(routed_layer, "layer", routed_layer)
        out[(i, "attention")] = _params(getattr(layer, "self_attn", None))
        out[(i, "mlp")] = _params(getattr(layer, "mlp", None))
    return out


def route_cost(model: torch.nn.Module, route: LayerRoute, vocab_share: float = 1.0) -> float:
    """Modelled cost of one pass under `route` (core.decoding.cost's rule, minus skipped blocks; head scaled)."""
    layers = decoder_layers(model)
    head = _params(model.get_output_embeddings())
    blocks = block_params(model)
    total = sum(_params(layer) for layer in layers) + head
    used = sum(_params(layers[i]) for i in route.layers) + head * vocab_share
    used -= sum(blocks[(i, "attention")] for i in route.skip_attention)
    used -= sum(blocks[(i, "mlp")] for i in route.skip_mlp)
    return used / total


def route_from_blocks(dropped: list[Block], config: object, name: str) -> LayerRoute:
    """A route skipping `dropped` blocks; a layer with both blocks dropped becomes a whole-layer skip."""
    n = int(config.get_text_config().num_hidden_layers if hasattr(config, "get_text_config")
            else config.num_hidden_layers)
    attention = {i for i, part in dropped if part == "attention"}
    mlp = {i for i, part in dropped if part == "mlp"}
    whole = attention & mlp
    base = resolve_route(sorted(set(range(n)) - whole), config)
    return with_sublayer_skips(base, attention - whole, mlp - whole, config, name)


class Calibrator:
    """Teacher-forced scoring of slim routes on a fixed set of texts (one pass over them per route)."""

    def __init__(self, bundle: ModelBundle, texts: list[Text]) -> None:
        self.model = bundle.verifier.model
        self.texts = texts
        self.stop_ids = sorted(stop_token_ids(self.model, bundle.verifier.tokenizer))
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.device = next(self.model.parameters()).device
        self.passes = 0
        self.full_hidden = self.final_hidden(None)
        self.full_choice = signals_from_logits(self.head(self.full_hidden))[0]

    @torch.inference_mode()
    def final_hidden(self, route: LayerRoute | None) -> torch.Tensor:
        """Final-norm hidden states at every output-predicting position of every text, stacked [N, width]."""
        rows = []
        with routed(route):
            for t in self.texts:  # one text at a time: no padding to pay for
                ids = torch.tensor([t.sequence], device=self.device)
                states = self.model.model(input_ids=ids, use_cache=False).last_hidden_state
                rows.append(states[0, t.first - 1:len(t.sequence) - 1].float().cpu())
        self.passes += 1
        return torch.cat(rows)

    @torch.inference_mode()
    def block_contributions(self) -> dict[Block, float]:
        """One full pass: each block's output norm relative to the residual stream entering its layer,
        averaged over positions. Small means dropping it changes little: a ranking from one pass
        instead of one pass per block."""
        residual: dict[int, torch.Tensor] = {}
        ratios: dict[Block, list[float]] = {}
        hooks = []

        def remember(index: int) -> Callable:
            def hook(_module: object, args: tuple, kwargs: dict) -> None:
                residual[index] = (args[0] if args else kwargs["hidden_states"]).norm(dim=-1)
            return hook

        def measure(index: int, part: str) -> Callable:
            def hook(_module: object, _args: object, out: object) -> None:
                value = out[0] if isinstance(out, tuple) else out
                ratios.setdefault((index, part), []).append(
                    float((value.norm(dim=-1) / residual[index].clamp(min=1e-6)).mean()))
            return hook

        for i, layer in enumerate(decoder_layers(self.model)):
            hooks.append(layer.register_forward_pre_hook(remember(i), with_kwargs=True))
            inner = getattr(layer, "layer", layer)
            for attribute, part in (("self_attn", "attention"), ("mlp", "mlp")):
                if getattr(inner, attribute, None) is not None:
                    hooks.append(getattr(inner, attribute).register_forward_hook(measure(i, part)))
        try:
            self.final_hidden(None)
        finally:
            for hook in hooks:
                hook.remove()
        return {block: float(np.mean(values)) for block, values in ratios.items()}

    def head(self, hidden: torch.Tensor, vocab: torch.Tensor | None = None) -> torch.Tensor:
        weight = self.model.get_output_embeddings().weight.detach().float().cpu()
        return hidden @ (weight if vocab is None else weight[vocab]).T

    def context_vocab(self, top: int) -> list[torch.Tensor]:
        """Per text: ids < top, the stop tokens and every token of the text (prompt and output)."""
        return [torch.tensor(sorted(set(range(min(top, self.vocab_size))) | set(t.sequence) | set(self.stop_ids)))
                for t in self.texts]

    def score(self, route: LayerRoute, target: float, signal: str, vocab_tops: tuple[int | None, ...] = (None,),
              hidden: torch.Tensor | None = None, taus: dict[int | None, float] | None = None) -> list[RouteScore]:
        """Score `route` with each head size. With `taus` given (held-apart text) the thresholds are
        fixed, not re-fitted."""
        if hidden is None:
            hidden = self.full_hidden if route.is_full else self.final_hidden(route)
        scores = []
        for top in vocab_tops:
            choice, conf, share = self._choices(hidden, top)
            agree = choice == self.full_choice
            c = conf[signal]
            tau = taus[top] if taus is not None else lowest_threshold_for_precision(c, agree, target)
            taken = fires(c, tau)
            coverage = float(taken.mean())
            cost = route_cost(self.model, route, share)
            scores.append(RouteScore(route=route.describe(), cost=cost, tau_slim=tau, coverage=coverage,
                                     precision=float(agree[taken].mean()) if taken.any() else float("nan"),
                                     agreement=float(agree.mean()), net_saving=coverage - cost, vocab_top=top,
                                     tokens=len(c), route_spec=route_to_dict(route)))
        return scores

    def _choices(self, hidden: torch.Tensor, top: int | None) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
        if top is None:
            choice, conf = signals_from_logits(self.head(hidden))
            return choice, conf, 1.0
        choices, confs, sizes, start = [], [], [], 0
        for t, vocab in zip(self.texts, self.context_vocab(top), strict=True):
            n = len(t.sequence) - t.first
            local, conf = signals_from_logits(self.head(hidden[start:start + n], vocab))
            choices.append(vocab.numpy()[local])
            confs.append(conf)
            sizes.append(len(vocab))
            start += n
        merged = {s: np.concatenate([c[s] for c in confs]) for s in confs[0]}
        return np.concatenate(choices), merged, float(np.mean(sizes)) / self.vocab_size


def build_texts(bundle: ModelBundle, prompts: list[str], tokens: int) -> list[Text]:
    """The full model's own greedy output for each prompt (memoised), as teacher-forcing texts."""
    texts = []
    for prompt in prompts:
        config = DecodeConfig(mode="plain", max_new_tokens=tokens)
        output = generate(bundle, prompt, config).token_ids
        prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt)
        texts.append(Text(sequence=prompt_ids + output, first=len(prompt_ids)))
    return texts


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
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--precision", type=float, default=0.95, help="precision target of tier 2 at tau_slim")
    parser.add_argument("--signal", default="prob", choices=["prob", "margin", "entropy"])
    parser.add_argument("--per-family", type=int, default=1, help="calibration (and evaluation) prompts per family")
    parser.add_argument("--tokens", type=int, default=32, help="greedy output tokens per prompt")
    parser.add_argument("--prefixes", default="1,2,3,4,6,8", help="how many ranked units to drop (one pass each)")
    parser.add_argument("--vocab-tops", default="2048,8192", help="restricted head sizes to measure")
    parser.add_argument("--no-sublayer", action="store_true", help="whole layers only")
    parser.add_argument("--no-save", action="store_true", help="do not write the preset JSON")
    parser.add_argument("--preset-name", default="smollm2-135m")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
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
        "command": "python -m core.calibrate " + " ".join(argv if argv is not None else sys.argv[1:]),
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


if __name__ == "__main__":
    main()
