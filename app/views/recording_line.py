"""The line under a grid saying where its points come from: computed here, or a recording with its models,
precision, machine and date, and what a live run of it would change."""

from __future__ import annotations

from app.grids import RunGrid
from app.recorded import precision_kept
from core.models.loading import EMBEDDED_ID, live_precision


def source_line(grid: RunGrid) -> str:
    """Where the points come from, in one line: a recorded sweep's models, dtype, machine and date."""
    meta = grid.recorded
    if meta is None:
        return "Computed here for this run, nearest point first, while nobody waits."
    models = meta.get("models") or {}
    names = " verifying, ".join(m["name"].removeprefix("embedded:") for m in (models.get("verifier"),
                                                                              models.get("drafter")) if m)
    machine = meta.get("machine") or {}
    return (f"Recorded {meta.get('recorded', '')} · {names}{' drafting' if models.get('drafter') else ''} · "
            f"{meta.get('dtype')} on {machine.get('processor', '?')} ({machine.get('cores', '?')} cores) · "
            + live_change(meta))


def live_change(meta: dict) -> str:
    """What a live run of a recording changes: the wall clock only where this machine loads the verifier in the
    recording's precision; where its recommendation differs (an int8 verifier), the numerics too, said so (and the
    pair then loads in this CPU's formats, the drafter's included: app.recorded.models_named)."""
    if precision_kept(meta):
        return "a live run changes the wall clock, nothing else"
    here = live_precision(((meta.get("load") or {}).get("verifier")) or EMBEDDED_ID)
    return (f"a live run here uses {here} (this CPU's recommended formats), so its tokens can differ from the "
            "recording's (numerics), and the wall clock")
