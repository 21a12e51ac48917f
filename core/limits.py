"""The one place for limits: the app, the CLI and the engine all read them from here.

Every limit can be overridden by an environment variable (the `VIASD_*` name in its `Spec`), so a
Space owner sizes the demo for the hardware without touching code. Values are read once, at import.

Bad values fail at start-up, they are not ignored: `VIASD_MAX_NEW_TOKENS=abc` (or 0, or 1e12) raises
one ConfigError line naming the variable, what it got and what it accepts. A public demo that silently
fell back to a default after a typo would run with limits its owner did not choose.

Sizes accept plain numbers (`2e9`, `2_000_000_000`) and unit suffixes: k, M, G, T (powers of 1000)
and KiB, MiB, GiB, TiB (powers of 1024), case-insensitive, with an optional trailing B.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from core.errors import ConfigError

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
          "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
_SIZE = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]*)?(?:e[0-9]+)?)\s*([kmgt]i?)?b?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Spec:
    """How one limit is read: its variable, its kind ('int', 'float', 'size' or 'ids') and its range."""

    env: str
    kind: str
    low: float = 0
    high: float = math.inf
    help: str = ""


def parse_size(text: str) -> int:
    """'2e9', '512MiB', '3.5 GB' -> a whole number; raises ValueError on anything else."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(text)
    number, unit = match.group(1).replace("_", ""), (match.group(2) or "").lower()
    value = float(number) * _UNITS[unit]
    if not math.isfinite(value):
        raise ValueError(text)
    return int(value)


def _parse(spec: Spec, raw: str) -> object:
    """One environment value, checked against its spec; raises ConfigError with one line."""
    if spec.kind == "ids":
        return tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    try:
        if spec.kind == "int":
            value: float = int(raw.strip().replace("_", ""))
        elif spec.kind == "float":
            value = float(raw)
        else:
            value = parse_size(raw)
    except ValueError:
        kind = {"int": "a whole number", "float": "a number", "size": "a size such as 2e9 or 4GiB"}[spec.kind]
        raise ConfigError(f"environment variable {spec.env}={raw[:40]!r} is not {kind}") from None
    if not (math.isfinite(value) and spec.low <= value <= spec.high):
        high = "" if math.isinf(spec.high) else f" to {spec.high:g}"
        raise ConfigError(f"environment variable {spec.env}={raw[:40]!r} is out of range: use {spec.low:g}{high}")
    return value


@dataclass(frozen=True)
class Limits:
    """Every limit of one process, each a field whose metadata says how its variable is parsed."""

    max_new_tokens: int = 512
    """Upper bound on tokens generated in one run (a 2-core CPU does about 10 tokens/s)."""
    max_prompt_tokens: int = 2048
    """Upper bound on prompt length after the chat template, in tokens."""
    max_prompt_chars: int = 20_000
    """Checked before tokenising, so a huge paste is refused cheaply."""
    max_gamma: int = 16
    """Longest draft per round."""
    memo_bytes: int = 512 * 2**20
    """Memory budget of the per-prefix prediction memo that makes threshold dragging live (the app's one memo,
    shared by every model it holds)."""
    run_time_budget_s: float = 180.0
    """Wall-clock budget of one run in the app; past it the run stops and its partial trace is shown."""
    max_model_params: int = 2 * 10**9
    """Largest model (parameters) a visitor may load: 2e9 on CPU (fp32, 8 GB), 8e9 on a GPU."""
    max_model_bytes: int = 10 * 10**9
    """Largest download (bytes of weight files) a visitor may trigger: 10 GB on CPU, 20 GB on a GPU."""
    allowed_models: tuple[str, ...] = ()
    """If not empty, the only Hub ids or folders that may be loaded besides the embedded model."""
    max_extra_bundles: int = 2
    """Visitor-chosen model pairs kept in memory besides the embedded one (least recently chosen dropped)."""
    max_sessions: int = 200
    """Browser sessions whose state the app and Gradio keep (least recently seen forgotten first)."""
    worker_threads: int = 8
    """Events the app works on at once (Gradio's `max_threads`; its default, 40, let the worker pool grow and
    shrink with the crowd). Model events take turns anyway (one at a time), so 8 leaves 7 for the light ones."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, gpu: bool | None = None) -> Limits:
        """Defaults for this hardware, overridden by every VIASD_* variable that is set."""
        environ = os.environ if environ is None else environ
        if gpu is None:
            import torch

            gpu = torch.cuda.is_available()
        values: dict[str, object] = {}
        if gpu:
            values.update(max_model_params=8 * 10**9, max_model_bytes=20 * 10**9)
        for name, spec in SPECS.items():
            raw = environ.get(spec.env)
            if raw is not None and (raw.strip() or spec.kind == "ids"):
                values[name] = _parse(spec, raw)
        return cls(**values)

    def describe(self) -> list[tuple[str, str, object]]:
        """(variable, meaning, value) rows, for the README and the app's About tab."""
        return [(SPECS[f.name].env, SPECS[f.name].help, getattr(self, f.name)) for f in fields(self)]


SPECS: dict[str, Spec] = {
    "max_new_tokens": Spec("VIASD_MAX_NEW_TOKENS", "int", 1, 100_000, "tokens generated per run"),
    "max_prompt_tokens": Spec("VIASD_MAX_PROMPT_TOKENS", "int", 1, 1_000_000, "prompt tokens after the template"),
    "max_prompt_chars": Spec("VIASD_MAX_PROMPT_CHARS", "int", 1, 10_000_000, "prompt characters"),
    "max_gamma": Spec("VIASD_MAX_GAMMA", "int", 1, 256, "draft length per round"),
    "memo_bytes": Spec("VIASD_MEMO_BYTES", "size", 0, 2**40, "prediction memo budget"),
    "run_time_budget_s": Spec("VIASD_RUN_TIME_BUDGET_S", "float", 0.1, 86_400, "seconds per run in the app"),
    "max_model_params": Spec("VIASD_MAX_MODEL_PARAMS", "size", 1, 10**13, "parameters of a loadable model"),
    "max_model_bytes": Spec("VIASD_MAX_MODEL_BYTES", "size", 1, 10**14, "bytes of weights a load may download"),
    "allowed_models": Spec("VIASD_ALLOWED_MODELS", "ids", help="comma-separated Hub ids; empty: any within size"),
    "max_extra_bundles": Spec("VIASD_MAX_EXTRA_BUNDLES", "int", 0, 64, "visitor model pairs kept in memory"),
    "max_sessions": Spec("VIASD_MAX_SESSIONS", "int", 1, 1_000_000, "browser sessions whose state is kept"),
    "worker_threads": Spec("VIASD_WORKER_THREADS", "int", 2, 1000, "events worked on at once (worker threads)"),
}

LIMITS = Limits.from_env()
"""This process's limits. The names below are kept for the modules that import them directly."""

MAX_NEW_TOKENS = LIMITS.max_new_tokens
MAX_PROMPT_TOKENS = LIMITS.max_prompt_tokens
MAX_PROMPT_CHARS = LIMITS.max_prompt_chars
MAX_GAMMA = LIMITS.max_gamma
MEMO_BYTES = LIMITS.memo_bytes
RUN_TIME_BUDGET_S = LIMITS.run_time_budget_s
MAX_EXTRA_BUNDLES = LIMITS.max_extra_bundles
MAX_SESSIONS = LIMITS.max_sessions
WORKER_THREADS = LIMITS.worker_threads
