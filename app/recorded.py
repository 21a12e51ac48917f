"""The shipped sweeps (examples/sweeps/), read once and pinned in the grid store, so they need no model.

A file that is missing, corrupt, or recorded for weights other than the ones this code loads gives one line
(`PROBLEMS`, shown on screen) and is left out: the app then runs those settings live, losing nothing else.
`OPENING` names the sweep the app opens on: the Qwen2.5-Coder pair, where the thresholds trade speed
against fidelity.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from app.grids import GRIDS, RunGrid
from core import EMBEDDED_ID
from core.models.loading import live_precision
from core.sweeps.record import SUFFIX, Sweep, SweepFileError, from_file, models_problem, recorded_load_options
from examples import HERE as EXAMPLES

log = logging.getLogger("viasd.app")

SWEEPS = EXAMPLES / "sweeps"
OPENING = "qwen2.5-coder-code0"
"""The recorded sweep of the opening screen."""
PRESETS = {"opening": OPENING, "three-tier": "smollm2-three-tier-chat0", "lookup": "smollm2-lookup-grounded8"}
"""The recorded sweeps the cockpit's buttons open, by name."""

_lock = threading.Lock()
_loaded: dict[str, RunGrid | None] = {}
PROBLEMS: dict[str, str] = {}
"""File name -> the one line saying why it was left out."""


def models_named(meta: dict[str, Any] | None) -> tuple[str, str, str]:
    """(verifier, drafter, the drafter's setting) a live run of a sweep loads, as the Models panel names them.

    Where this machine loads the verifier in the recording's precision, the drafter setting the sweep ran with, so
    a live run differs from the recorded one only in its wall clock. Elsewhere the numerics change anyway (the
    screen says so: app.views.recording_line), and the drafter setting is "" (the pair's recommended one here): a
    recording's bf16 "none" in float32 on an AVX2 CPU is a drafter slower than its int8 verifier (171 against
    119 ms a token, docs/benchmarks.md), where int8 weights and activations are its fast format."""
    load = (meta or {}).get("load") or {}
    verifier = load.get("verifier") or EMBEDDED_ID
    quant = recorded_load_options(meta or {}).get("drafter_quant") if precision_kept(meta or {}) else ""
    return verifier, load.get("drafter") or "", str(quant or "")


def precision_kept(meta: dict[str, Any]) -> bool:
    """Whether this machine loads the recording's verifier in the precision it was recorded in."""
    verifier = ((meta.get("load") or {}).get("verifier")) or EMBEDDED_ID
    return live_precision(verifier) == str(meta.get("dtype"))


def run_grid(sweep: Sweep) -> RunGrid:
    """A recorded sweep as a run grid (every point computed)."""
    base = sweep.traces[sweep.order[0]]
    models = (str(base.models.get("verifier")), str(base.models.get("drafter")), str(base.models.get("dtype")))
    grid = RunGrid(sweep.prompt, sweep.config, sweep.grid, models, reliability=sweep.reliability,
                   recorded=sweep.meta)
    for key in sweep.order:
        grid.traces[key] = sweep.traces[key]
    return grid


def load(name: str, folder: Path = SWEEPS) -> RunGrid | None:
    """The shipped sweep `name` (file name without its suffix), read and pinned once; None (with its line in
    PROBLEMS) when it cannot be used."""
    with _lock:
        if name in _loaded:
            return _loaded[name]
        path = folder / f"{name}{SUFFIX}"
        grid = None
        try:
            sweep = from_file(path)
            problem = models_problem(sweep)
            if problem:
                raise SweepFileError(f"sweep {name} is {problem}")
            grid = run_grid(sweep)
            GRIDS.pin(grid)
        except SweepFileError as exc:
            PROBLEMS[name] = str(exc)
            log.warning("%s", exc)
        _loaded[name] = grid
        return grid


def load_all(folder: Path = SWEEPS) -> list[RunGrid]:
    """Every shipped sweep that can be used."""
    names = sorted(p.name[: -len(SUFFIX)] for p in folder.glob(f"*{SUFFIX}"))
    return [grid for grid in (load(name, folder) for name in names) if grid is not None]


def problem_line() -> str:
    """One line naming the recorded sweeps left out and why ("" when none was)."""
    if not PROBLEMS:
        return ""
    return "⚠ Recorded sweeps left out (these settings run live instead): " + "; ".join(PROBLEMS.values())
