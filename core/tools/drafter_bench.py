"""`python -m core.tools.drafter_bench --pair qwen2.5-coder`: what each cheaper drafter costs and how often it is right.

For each drafter setting (core/models/drafter_quant.py: none, int8, int4, restricted heads), in one process, on
the verifier's own greedy answers to the calibration prompts (core/tools/calibrate_pair.py: written apart from
examples/, so the benchmark's prompts stay unseen):

* drafting step by step: the drafter predicts every answer token from its prefix with one KV-cached one-token
  pass, exactly as it drafts (a restricted head sees only the prefix's tokens). Per token: its top-1, whether it
  is the verifier's token, its confidence; per pass: the wall time. So `agreement` is the drafter's top-1
  agreement with the verifier, `coverage / precision` at tau is what tier 1 would keep and how often rightly;
* the verifier's own one-token passes on the same texts, interleaved text by text (the cost unit: a drafter
  token's cost is its median pass over the verifier's, measured side by side);
* classic SD for real (`--gamma`) on the same prompts: tokens/s and the ratio to our plain decoding, timed once at
  the start (its predictions are the texts).

`modelled SD x` prices a classic-SD round with the measured costs and an independent-token acceptance equal to
the agreement: (1 - a^(g+1)) / (1 - a) tokens for g drafter passes plus one verifier pass (its cost for g + 1
tokens over one from the shipped profile, 1.1 at 7 on this CPU in bf16). Modelled beside measured, labelled.
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from core.analysis.metrics import measured_speedup
from core.analysis.slim_calibration import Text
from core.config import DecodeConfig
from core.decoding.engine import generate
from core.decoding.scorer import Scorer
from core.models.drafter_quant import fallback_share
from core.models.layer_routes import resolve_route
from core.models.loading import ModelBundle, load_bundle, load_model, quantise_drafter
from core.tools.calibrate_pair import CALIBRATION_PROMPTS, cached_texts
from core.tools.pair_bench import PAIRS

TAUS = (0.9, 0.8, 0.7, 0.5)


@dataclass
class DrafterStats:
    """One drafter setting on the texts (see the module docstring)."""

    quant: str
    step_ms: float
    verifier_ms: float
    agreement: float
    coverage: dict[float, tuple[float, float]]  # tau -> (coverage, precision)
    fallback: float | None
    sd_tokens_per_s: float | None = None
    sd_x_plain: float | None = None
    tokens: int = 0

    @property
    def cost(self) -> float:
        return self.step_ms / self.verifier_ms


def modelled_sd(agreement: float, cost: float, gamma: int, verify: float = 1.1) -> float:
    """Classic SD's speed-up over plain for independent per-token acceptance `agreement` and drafter `cost`."""
    a = min(agreement, 0.999999)
    return (1 - a ** (gamma + 1)) / (1 - a) / (gamma * cost + verify)


def step_by_step(model: torch.nn.Module, texts: list[Text], name: str) -> tuple[np.ndarray, np.ndarray,
                                                                                  np.ndarray, list[float]]:
    """Per answer position: the model's top-1, its probability, the verifier's token; and each pass's seconds."""
    choices, confs, targets, seconds = [], [], [], []
    for text in texts:
        scorer = Scorer("drafter", model, resolve_route("full", model.config), None, name, read_memo=False)
        for position in range(text.first, len(text.sequence)):
            logits, call = scorer.predict(text.sequence, position, position)
            probs = torch.softmax(logits[0].float(), dim=-1)
            top = int(probs.argmax())
            choices.append(top)
            confs.append(float(probs[top]))
            targets.append(text.sequence[position])
            if not call.prefill:
                seconds.append(call.wall_s)
    return np.array(choices), np.array(confs), np.array(targets), seconds


def verifier_steps(bundle: ModelBundle, text: Text, positions: int) -> list[float]:
    """Seconds of the verifier's one-token passes over the first `positions` answer tokens of `text`."""
    model = bundle.verifier.model
    scorer = Scorer("full", model, resolve_route("full", model.config), None, "verifier", read_memo=False)
    out = []
    for position in range(text.first, min(len(text.sequence), text.first + positions + 1)):
        _, call = scorer.predict(text.sequence, position, position)
        if not call.prefill:
            out.append(call.wall_s)
    return out


def measure(bundle: ModelBundle, quant: str, texts: list[Text], prompts: list[str], gamma: int,
            plain_runs: dict[str, object], sd_runs: bool) -> DrafterStats:
    """One drafter setting: step-by-step drafting interleaved with verifier passes, then classic SD for real."""
    drafter = bundle.drafter
    step, verifier_s, parts = [], [], []
    for text in texts:
        parts.append(step_by_step(drafter.model, [text], drafter.identity))
        step.extend(parts[-1][3])
        verifier_s.extend(verifier_steps(bundle, text, 12))
    choice, conf, target = (np.concatenate([p[i] for p in parts]) for i in range(3))
    agree = choice == target
    coverage = {}
    for tau in TAUS:
        taken = conf >= tau
        coverage[tau] = (float(taken.mean()), float(agree[taken].mean()) if taken.any() else float("nan"))
    stats = DrafterStats(quant, statistics.median(step) * 1e3, statistics.median(verifier_s) * 1e3,
                         float(agree.mean()), coverage, fallback_share(drafter.model), tokens=len(agree))
    if sd_runs:
        ratios, rates = [], []
        for prompt in prompts:
            config = DecodeConfig(mode="sd", drafter="model", gamma=gamma, max_new_tokens=len(texts[0].sequence)
                                  - texts[0].first)
            trace = generate(bundle, prompt, config, replay=False)
            rates.append(len(trace.tokens) / trace.wall_s)
            ratios.append(measured_speedup(trace, plain_runs[prompt]))
        stats.sd_tokens_per_s, stats.sd_x_plain = statistics.median(rates), statistics.median(ratios)
    return stats


def table(rows: list[DrafterStats], gamma: int) -> list[str]:
    taus = " | ".join(f"τ {t}: cov. / prec." for t in TAUS)
    lines = [f"| drafter | step ms | verifier ms | cost (× pass) | agreement | {taus} | fallback | "
             f"modelled SD × (γ {gamma}) | SD tok/s | SD × plain |",
             "|---|---|---|---|---|" + "---|" * len(TAUS) + "---|---|---|---|"]
    for r in rows:
        cells = " | ".join(f"{c:.2f} / {p:.3f}" for c, p in (r.coverage[t] for t in TAUS))
        fallback = "–" if r.fallback is None else f"{r.fallback:.1%}"
        sd = "–" if r.sd_tokens_per_s is None else f"{r.sd_tokens_per_s:.2f}"
        ratio = "–" if r.sd_x_plain is None else f"{r.sd_x_plain:.2f}"
        lines.append(f"| {r.quant} | {r.step_ms:.1f} | {r.verifier_ms:.1f} | {r.cost:.3f} | {r.agreement:.3f} | "
                     f"{cells} | {fallback} | {modelled_sd(r.agreement, r.cost, gamma):.2f} | {sd} | {ratio} |")
    return lines


def main(argv: list[str] | None = None) -> list[DrafterStats]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", choices=sorted(PAIRS), default="qwen2.5-coder")
    p.add_argument("--model", help="the verifier (default: the pair's)")
    p.add_argument("--drafter-model", help="the drafter (default: the pair's)")
    p.add_argument("--quants", default="none,int8,int4,int4+vocab", help="comma list of drafter settings")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--tokens", type=int, default=96, help="answer tokens per text")
    p.add_argument("--prompts", type=int, default=len(CALIBRATION_PROMPTS), help="how many calibration prompts")
    p.add_argument("--gamma", type=int, default=6, help="classic SD's draft length")
    p.add_argument("--no-sd", action="store_true", help="skip the real classic-SD runs")
    p.add_argument("--texts-cache", type=Path, help="JSON file keeping the verifier's answers between runs")
    p.add_argument("--threads", type=int)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    verifier, drafter = args.model or PAIRS[args.pair][0], args.drafter_model or PAIRS[args.pair][1]
    bundle = load_bundle(verifier, drafter, dtype=args.dtype, drafter_quant="none")
    prompts = list(CALIBRATION_PROMPTS[: args.prompts])
    ordered = prompts[0::2] + prompts[1::2]
    print(f"load average {os.getloadavg()[0]:.2f} at the start; our plain decoding of {len(ordered)} prompts first "
          "(timed; its predictions make the texts)", flush=True)
    plain_runs = {prompt: generate(bundle, prompt, DecodeConfig(mode="plain", max_new_tokens=args.tokens),
                                   replay=False) for prompt in ([] if args.no_sd else ordered)}
    cal, held = cached_texts(bundle, prompts[0::2], prompts[1::2], args.tokens, args.texts_cache)
    texts = cal + held
    print(f"{len(texts)} texts, {sum(len(t.sequence) - t.first for t in texts)} answer tokens", flush=True)
    rows = []
    for quant in [q.strip() for q in args.quants.split(",") if q.strip()]:
        if quant != "none":
            bundle = ModelBundle(verifier=bundle.verifier, drafter=quantise_drafter(
                load_model(drafter, str(bundle.verifier.device), args.dtype), quant))
        rows.append(measure(bundle, bundle.drafter.quant, texts, ordered, args.gamma, plain_runs, not args.no_sd))
        print("\n".join(table(rows[-1:], args.gamma)[2:]), flush=True)
    print("\n" + "\n".join(table(rows, args.gamma)))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return rows


if __name__ == "__main__":
    main()
