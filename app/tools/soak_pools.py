"""The soak's request pools: the prompts and settings its visitors pick from, and the slider moves they make.

Small on purpose. Visitors mix every mode, both cheap drafters, greedy and seeded sampling, but from a
few bases and a few threshold pairs per base, so the same request recurs (as on a public demo, where
most visitors press the buttons they are shown) and the checker runs each distinct request once.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict
from typing import Any

from app.prefetch import STEP as NOTCH
from app.settings import Settings
from core.config import DecodeConfig, preset
from core.models.pairs import QWEN_CODER_PAIR
from examples import load_prompts, load_walkthroughs

__all__ = ["QWEN_CODER_PAIR", "Settings"]

TOKENS = 24
"""New tokens of a SmolLM2 run (about 2-4 s on two cores)."""
PAIR_TOKENS = 16
LONG_TOKENS = 96
"""A run long enough to be stopped mid-way."""
SCHEME_TOKENS = 12
GRID_VALUES = "0.5, 0.9, 1.0"
SMOL_PROMPTS = tuple(p.text for p in (*load_prompts("chat")[:2], *load_prompts("grounded")[:2],
                                      *load_prompts("summarisation")[:1]))
PAIR_PROMPTS = tuple(p.text for p in load_prompts("code")[:3])
THREE_TIER = Settings.of(DecodeConfig(max_new_tokens=TOKENS))
SMOL_BASES = (
    THREE_TIER,                                                          # three tiers, self-drafter
    Settings(max_new_tokens=TOKENS),                                     # the app's opening: prompt lookup, audited
    THREE_TIER.with_(mode="sd", tau_accept=1.0, tau_slim=1.0),           # classic SD, self-drafter
    THREE_TIER.with_(mode="plain"),
    THREE_TIER.with_(sampling=True, temperature=0.8, top_p=0.95, seed=1),  # seeded sampling
    Settings(max_new_tokens=TOKENS, mode="sd", copy_evidence="verifier", tau_accept=1.0, tau_slim=1.0),
)
PAIR_BASE = Settings.of(preset(QWEN_CODER_PAIR.settings).with_(max_new_tokens=PAIR_TOKENS))
FAR = ((0.3, 0.1), (0.95, 0.9), (0.6, 1.0))
"""Far jumps: a drag across the slider, to pairs the prefetch never computed."""


def smol_settings(rng: random.Random, via: bool = False) -> Settings:
    """A SmolLM2 request from the pool (`via`: a VIA-SD one, which a slider can re-route)."""
    base = rng.choice([b for b in SMOL_BASES if b.mode == "via"] if via else SMOL_BASES)
    seed = rng.choice((1, 2)) if base.sampling else base.seed
    return base.with_(prompt=rng.choice(SMOL_PROMPTS), seed=seed)


def pair_settings(rng: random.Random) -> Settings:
    return PAIR_BASE.with_(prompt=rng.choice(PAIR_PROMPTS))


def _base_of(shown: Settings) -> Settings:
    """The pool base a run on screen was drawn from (its thresholds before any move)."""
    for base in (*SMOL_BASES, PAIR_BASE):
        if base.with_(prompt=shown.prompt, seed=shown.seed, tau_accept=shown.tau_accept,
                      tau_slim=shown.tau_slim) == shown:
            return base
    return shown


def valid(tau_accept: float, tau_slim: float) -> bool:
    return 0.0 <= tau_accept <= 1.0 and 0.0 <= tau_slim <= 1.0 and (tau_slim <= tau_accept or tau_slim == 1.0)


def moved(shown: Settings, rng: random.Random, far: bool) -> Settings:
    """The settings after one slider move: one notch from the base's thresholds on either slider, or a far jump
    (a few fixed targets, so each base has at most seven threshold pairs)."""
    base = _base_of(shown)
    if far:
        targets = list(FAR)
    else:
        a, s = base.tau_accept, base.tau_slim
        targets = [(round(a + da, 4), round(s + ds, 4)) for da, ds in ((NOTCH, 0), (-NOTCH, 0), (0, NOTCH),
                                                                        (0, -NOTCH))]
    targets = [t for t in targets if valid(*t) and t != (shown.tau_accept, shown.tau_slim)] or [(base.tau_accept,
                                                                                                  base.tau_slim)]
    tau_accept, tau_slim = rng.choice(targets)
    return shown.with_(tau_accept=tau_accept, tau_slim=tau_slim)


def values(settings: Settings) -> dict[str, Any]:
    """The settings as the API's named parameters."""
    return asdict(settings)


def walkthrough_titles() -> list[str]:
    return [w["title"] for w in load_walkthroughs()]


def json_or_none(text: str) -> dict | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
