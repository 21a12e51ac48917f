"""The one sentence under Compare's charts: the fastest setting within a words-differing budget the user picks.

Pure: it reads the threshold grid (VIA-SD per τ pair) and the scheme sweep's points (VIA-SD, BiLD,
cascades), whichever have run, and never runs a model, so moving the budget answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from app.views.grid_chart import row_name
from app.views.tradeoff_chart import scheme_name

DEFAULT_BUDGET = 5.0
"""Percent of words allowed to differ from the full model's own answer, before the user picks one."""


@dataclass(frozen=True)
class Candidate:
    """One setting that ran: its name, modelled speed-up and share of words differing (0..1)."""

    name: str
    speedup: float
    differing: float


def candidates(grid: pd.DataFrame | None, points: pd.DataFrame | None) -> list[Candidate]:
    """Every setting the grid and the scheme sweep measured (words differing; the grid's older
    1 − agreement where words were not measured)."""
    found = []
    if grid is not None and not grid.empty:
        differing = grid["words_differing"] if "words_differing" in grid else 1.0 - grid["full_agreement"]
        for (_, row), d in zip(grid.iterrows(), differing, strict=True):
            found.append(Candidate(row_name(row["tau_accept"], row["tau_slim"]),
                                   float(row["modelled_speedup"]), float(d)))
    if points is not None and not points.empty:
        for _, row in points.iterrows():
            found.append(Candidate(scheme_name(row["scheme"], row["setting"]), float(row["modelled_speedup"]),
                                   float(row["words_differing"])))
    return found


def recommendation(grid: pd.DataFrame | None, points: pd.DataFrame | None, budget_percent: float) -> str:
    """'Fastest within 5 % words differing: …', or why there is none (nothing ran, fits, or beats plain)."""
    try:
        budget = max(0.0, float(budget_percent)) / 100.0
    except (TypeError, ValueError):
        return "Type a words-differing budget in percent, e.g. 5."
    found = candidates(grid, points)
    if not found:
        return "Run the threshold grid or the schemes above: the fastest setting within your budget appears here."
    inside = [c for c in found if c.differing <= budget + 1e-9]
    if not inside:
        closest = min(found, key=lambda c: (c.differing, -c.speedup))
        return (f"No setting here stays within {budget:.0%} words differing; the closest is {closest.name}: "
                f"{closest.differing:.0%} differing at {closest.speedup:.2f}× plain (modelled).")
    best = max(inside, key=lambda c: (c.speedup, -c.differing))
    if best.speedup < 1.0:
        return (f"Nothing here beats plain decoding within {budget:.0%} words differing: the fastest, {best.name}, "
                f"runs at {best.speedup:.2f}× plain (modelled) — plain decoding is the better choice on this prompt.")
    return (f"**Fastest within {budget:.0%} words differing:** {best.name}, {best.speedup:.2f}× plain (modelled), "
            f"{best.differing:.0%} of words differing from the full model's own answer.")
