"""Compare's tables for people: plain column names (app.views.words), rounded numbers, yes / no, few columns.

The numbers are core.analysis.metrics' (`summarize`) and the grid's rows, formatted here only; the raw
columns stay in the downloads and in `core.analysis.tradeoffs`.
"""

from __future__ import annotations

import pandas as pd

from app.views import words
from app.views.grid_chart import row_name
from app.views.numbers import speed_text
from app.views.tradeoff_chart import scheme_name
from core.analysis.metrics import measured_speedup, summarize
from core.trace import Trace

COMPARE_COLUMNS = ("setting", "speed-up (modelled)", "tokens/s (measured)", "speed-up (measured)",
                   words.metric_label("words_differing"), words.metric_label("rejection_rate"),
                   "token agreement", "same text", "tokens")
MEASURED = ("tokens/s (measured)", "speed-up (measured)")
SCHEME_COLUMNS = ("setting", "speed-up (modelled)", words.metric_label("words_differing"),
                  "same text (share of prompts)")
GRID_COLUMNS = ("setting", "speed-up (modelled)", words.metric_label("words_differing"),
                words.metric_label("rejection_rate"), "same text")


def _percent(value: object) -> str:
    return "—" if value is None or pd.isna(value) else f"{float(value):.0%}"


def _yes(value: object) -> str:
    return "—" if value is None or pd.isna(value) else ("yes" if bool(value) else "no")


def compare_table(traces: dict[str, Trace], labels: dict[str, str], measured: bool) -> pd.DataFrame:
    """One row per mode, named by `labels`; the measured columns only when every pass ran for real."""
    rows = []
    for mode, trace in traces.items():
        m = summarize(trace)
        speed = measured_speedup(trace, traces["plain"]) if "plain" in traces else None
        rows.append(dict(zip(COMPARE_COLUMNS, (
            labels.get(mode, mode), speed_text(m["modelled_speedup"]), f"{m['tokens_per_s']:.1f}",
            "—" if speed is None else f"{speed:.2f}×", _percent(m.get("words_differing")),
            _percent(m["rejection_rate"]) if m["drafted"] else "—", _percent(m.get("full_agreement")),
            _yes(m.get("identical_to_full")), str(m["tokens"])), strict=True)))
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    return table if measured else table.drop(columns=list(MEASURED))


def grid_table(grid: pd.DataFrame | None) -> pd.DataFrame:
    """The threshold grid, fastest first, in plain columns."""
    if grid is None or grid.empty:
        return pd.DataFrame(columns=list(GRID_COLUMNS))
    ordered = grid.sort_values("modelled_speedup", ascending=False)
    differing = ordered["words_differing"] if "words_differing" in ordered else 1.0 - ordered["full_agreement"]
    return pd.DataFrame({
        GRID_COLUMNS[0]: [row_name(a, s) for a, s in zip(ordered["tau_accept"], ordered["tau_slim"], strict=True)],
        GRID_COLUMNS[1]: [speed_text(v) for v in ordered["modelled_speedup"]],
        GRID_COLUMNS[2]: [_percent(v) for v in differing],
        GRID_COLUMNS[3]: [_percent(v) for v in ordered["rejection_rate"]],
        GRID_COLUMNS[4]: [_yes(v) for v in ordered["identical_to_full"]],
    })


def schemes_table(points: pd.DataFrame | None) -> pd.DataFrame:
    """Every scheme setting the sweep ran, fastest first, each named as the chart and the advice name it."""
    if points is None or points.empty:
        return pd.DataFrame(columns=list(SCHEME_COLUMNS))
    ordered = points.sort_values(["modelled_speedup", "words_differing"], ascending=[False, True])
    return pd.DataFrame({
        SCHEME_COLUMNS[0]: [scheme_name(a, b) for a, b in zip(ordered["scheme"], ordered["setting"], strict=True)],
        SCHEME_COLUMNS[1]: [speed_text(v) for v in ordered["modelled_speedup"]],
        SCHEME_COLUMNS[2]: [_percent(v) for v in ordered["words_differing"]],
        SCHEME_COLUMNS[3]: [_percent(v) for v in ordered["identical_share"]],
    })


def empty_compare_table(measured: bool = True) -> pd.DataFrame:
    """The table's headers before a run (never '1 | 2 | 3')."""
    columns = [c for c in COMPARE_COLUMNS if measured or c not in MEASURED]
    return pd.DataFrame(columns=columns)
