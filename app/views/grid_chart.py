"""The threshold grid: modelled speed-up against words differing (and against drafts rejected) per τ pair.

Both thresholds are visible on the chart itself: τ_accept is the marker's colour (scale on the right),
τ_slim its shape (one legend entry per value). Pairs with identical results share a marker, drawn
larger with "×n" beside it and every pair in its hover. The 1.0× line is plain decoding, and when no
pair beats it the chart says so. Every row is named once (`row_name`), the way the table and the advice
name it: a pair with both tiers off is classic SD and is called so. Nothing here runs a model.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import words
from app.views.chart_style import finish
from core.round_policy import switched_off, threshold_text

SLIM_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "pentagon", "hexagon", "star-triangle-up")
NOTHING_BEATS_PLAIN = "nothing here beats plain decoding (1.0×)"


def pair_label(tau_accept: float, tau_slim: float) -> str:
    """A threshold pair as people read it ('off' for a tier switched off)."""
    return f"τ_accept {threshold_text(tau_accept)}, τ_slim {threshold_text(tau_slim)}"


def row_name(tau_accept: float, tau_slim: float) -> str:
    """A grid row's name, the same in the table, the hover and the advice: VIA-SD at a pair, or classic SD when the
    pair switches both tiers off (then every draft token goes to the full model)."""
    if switched_off(tau_accept) and switched_off(tau_slim):
        return f"classic SD ({pair_label(tau_accept, tau_slim)})"
    return f"VIA-SD at {pair_label(tau_accept, tau_slim)}"


def _grouped(grid: pd.DataFrame, x: str) -> pd.DataFrame:
    """One row per distinct (x, speed-up, τ_slim) point, with every threshold pair that landed on it."""
    labels = [row_name(a, s) for a, s in zip(grid["tau_accept"], grid["tau_slim"], strict=True)]
    keyed = grid.assign(_x=grid[x].round(4), _y=grid["modelled_speedup"].round(4), _label=labels)
    return keyed.groupby(["_x", "_y", "tau_slim"], as_index=False).agg(
        pairs=("_label", list), count=("_label", "size"), tau_accept=("tau_accept", "max"))


def _x_column(grid: pd.DataFrame) -> tuple[str, str]:
    """Words differing leads; an older grid without it falls back to 1 - token agreement, labelled so."""
    if "words_differing" in grid:
        return "words_differing", "words differing (%, measured)"
    grid["_one_minus_agreement"] = 1.0 - grid["full_agreement"]
    return "_one_minus_agreement", "1 − token agreement (%, measured)"


def tradeoff_figure(grid: pd.DataFrame | None, tau_accept: float, tau_slim: float) -> go.Figure:
    """Modelled speed-up against words differing (left) and drafts rejected (right) over a threshold grid;
    the sliders' pair is starred."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=("against words differing", "against drafts rejected"))
    note = ""
    if grid is not None and not grid.empty:
        grid = grid.copy()
        fid, fid_title = _x_column(grid)
        slims = sorted(grid["tau_slim"].unique())
        current = ((grid["tau_accept"] - tau_accept).abs() < 1e-6) & ((grid["tau_slim"] - tau_slim).abs() < 1e-6)
        for col, x in ((1, fid), (2, "rejection_rate")):
            points = _grouped(grid, x)
            for k, slim in enumerate(slims):
                mine = points[points["tau_slim"] == slim]
                fig.add_trace(go.Scatter(
                    x=mine["_x"] * 100, y=mine["_y"], mode="markers+text", legendgroup=f"s{slim}",
                    name=f"τ_slim {threshold_text(slim)}", showlegend=col == 1,
                    text=[f"×{n}" if n > 1 else "" for n in mine["count"]], textposition="middle right",
                    customdata=["<br>".join(p) for p in mine["pairs"]],
                    marker={"size": [13 + 4 * min(n - 1, 5) for n in mine["count"]], "color": mine["tau_accept"],
                            "cmin": 0.0, "cmax": 1.0, "colorscale": "Viridis", "symbol": SLIM_SYMBOLS[k % 9],
                            "line": {"width": 1, "color": "#333333"}, "showscale": col == 2 and k == 0,
                            "colorbar": {"title": {"text": "τ_accept"}, "len": 0.8}},
                    hovertemplate="%{customdata}<br>speed-up %{y:.2f}× (modelled)<br>"
                                  + ("words differing" if col == 1 else "drafts rejected")
                                  + " %{x:.0f} %<extra></extra>"), row=1, col=col)
            if current.any():
                fig.add_trace(go.Scatter(
                    x=grid.loc[current, x] * 100, y=grid.loc[current, "modelled_speedup"], mode="markers",
                    name="the sliders' pair", showlegend=col == 1, legendgroup="current",
                    hovertemplate=f"the sliders' pair: {row_name(tau_accept, tau_slim)}<br>speed-up %{{y:.2f}}×"
                                  "<extra></extra>",
                    marker={"size": 24, "symbol": "star", "color": "#D55E00", "line": {"width": 2, "color": "#111"}}),
                    row=1, col=col)
        fig.update_xaxes(title=fid_title, row=1, col=1)
        fig.update_xaxes(title=words.metric_label("rejection_rate") + " (%)", row=1, col=2)
        if float(grid["modelled_speedup"].max()) < 1.0:
            note = NOTHING_BEATS_PLAIN
        top = max(1.15, float(grid["modelled_speedup"].max()) * 1.08)
        fig.update_yaxes(range=[0, top])
    else:
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                           text="press “Run threshold grid” to fill this chart")
        fig.update_xaxes(range=[0, 100])  # an empty chart's axes start at 0, not plotly's -1
        fig.update_yaxes(range=[0, 2])
    for col in (1, 2):
        fig.add_hline(y=1.0, line={"color": "#7a7a7a", "dash": "dash", "width": 2}, row=1, col=col,
                      annotation_text="plain 1.0×", annotation_position="top left")
    fig.update_yaxes(title="speed-up (modelled)", row=1, col=1)
    subtitle = note or "speed-up modelled, fidelity measured; ×n = n pairs alike"
    return finish(fig, "Threshold trade-off", subtitle, height=480)
