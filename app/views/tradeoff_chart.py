"""The scheme trade-off chart: VIA-SD, BiLD and Speculative Cascades fronts on one pair of axes.

A pure figure over `core.analysis.tradeoffs.scheme_points` (one row per scheme and setting, means over the same
prompts): x is the share of words differing from the full model's own greedy output, y the modelled
accelerator speed-up. Every setting is a faint marker; each scheme's Pareto front (core.analysis.tradeoffs) is
a line through its non-dominated settings. VIA-SD's front is drawn last, thickest and on top, so the others
never bury it; the others stay visible as thinner lines with their own marker. Settings that land on the same
point (every scheme's exact setting is classic SD, so those always coincide) carry "×n" beside them and every
name in their hover, so no scheme hides under another's marker. A setting is named once (`scheme_name`), the
same in the hover, the schemes table and the advice. Nothing here runs a model.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.views.chart_style import finish
from core.analysis.tradeoffs import exact_label, pareto_fronts

HIGHLIGHT = "via-sd"
SCHEME_STYLE = {  # Okabe-Ito colours, and a distinct marker each so the chart reads without colour
    "via-sd": ("VIA-SD", "#0072B2", "circle"),
    "bild": ("BiLD", "#D55E00", "square"),
    "cascade-chow": ("Cascade · Chow", "#009E73", "diamond"),
    "cascade-diff": ("Cascade · Diff", "#CC79A7", "triangle-up"),
    "cascade-opt": ("Cascade · OPT", "#E69F00", "x"),
}


def scheme_name(scheme: str, setting: str) -> str:
    """One scheme setting as every view names it; a scheme's exact setting says that it is classic SD."""
    name = SCHEME_STYLE.get(scheme, (scheme,))[0]
    exact = " = classic SD" if scheme in SCHEME_STYLE and setting == exact_label(scheme) else ""
    return f"{name} ({setting}{exact})"


def coincident(points: pd.DataFrame) -> pd.DataFrame:
    """One row per point where two or more settings landed (same rounded speed-up and difference), with their
    names and count."""
    keyed = points.assign(_x=points["words_differing"].round(4), _y=points["modelled_speedup"].round(4),
                          _name=[scheme_name(a, b) for a, b in zip(points["scheme"], points["setting"], strict=True)])
    grouped = keyed.groupby(["_x", "_y"], as_index=False).agg(names=("_name", list), count=("_name", "size"))
    return grouped[grouped["count"] > 1]


def tradeoff_chart(points: pd.DataFrame | None, current: tuple[str, str] | None = None,
                   title: str = "Speed-up against words differing") -> go.Figure:
    """Fronts per scheme; `current` = (scheme, setting label) is starred when it is among the points."""
    fig = go.Figure()
    measure = "words differing"
    if points is None or points.empty:
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                           text="press “Run VIA-SD, BiLD and cascades” to fill this chart")
        fig.update_xaxes(range=[0, 100])  # an empty chart's axes start at 0, not plotly's -1
        fig.update_yaxes(range=[0, 2])
    else:
        fronts = pareto_fronts(points)
        if "difference_measure" in points:  # until word-level fidelity lands: 1 - token agreement
            measure = str(points["difference_measure"].iloc[0])
        fig.update_xaxes(range=[-2.0, max(5.0, float(points["words_differing"].max()) * 100 * 1.05)])
        order = sorted(points["scheme"].unique(), key=lambda scheme: scheme == HIGHLIGHT)  # VIA-SD last: on top
        for scheme in order:
            group = points[points["scheme"] == scheme]
            lead = scheme == HIGHLIGHT
            name, colour, symbol = SCHEME_STYLE.get(scheme, (scheme, "#555555", "circle"))
            fig.add_trace(go.Scatter(
                x=group["words_differing"] * 100, y=group["modelled_speedup"], mode="markers",
                name=f"{name} settings", legendgroup=scheme, showlegend=False, opacity=0.35,
                marker={"color": colour, "symbol": symbol, "size": 9},
                text=[scheme_name(scheme, setting) for setting in group["setting"]],
                hovertemplate="%{text}<br>%{x:.1f} % differing, %{y:.2f}× (dominated or on the front)<extra></extra>"))
            front = fronts[scheme]
            fig.add_trace(go.Scatter(
                x=front["words_differing"] * 100, y=front["modelled_speedup"], mode="lines+markers",
                name=name, legendgroup=scheme, opacity=1.0 if lead else 0.8,
                line={"color": colour, "width": 5 if lead else 2, "shape": "hv", "dash": "solid" if lead else "dot"},
                marker={"color": colour, "symbol": symbol, "size": 14 if lead else 10,
                        "line": {"width": 1.5 if lead else 1, "color": "#333333"}},
                text=[scheme_name(scheme, setting) for setting in front["setting"]],
                hovertemplate="%{text}<br>%{x:.1f} % words differing<br>%{y:.2f}× modelled speed-up"
                              "<extra>front</extra>"))
        shared = coincident(points)
        if not shared.empty:  # settings under one marker: say how many, and name them all
            fig.add_trace(go.Scatter(
                x=shared["_x"] * 100, y=shared["_y"], mode="text", text=[f"×{n}" for n in shared["count"]],
                textposition="middle right", name="settings on one point", showlegend=False,
                customdata=["<br>".join(names) for names in shared["names"]],
                hovertemplate="%{customdata}<extra>same point</extra>"))
        if current is not None:
            hit = points[(points["scheme"] == current[0]) & (points["setting"] == current[1])]
            if not hit.empty:
                fig.add_trace(go.Scatter(
                    x=hit["words_differing"] * 100, y=hit["modelled_speedup"], mode="markers", name="current",
                    marker={"size": 22, "symbol": "star", "color": "#F0E442", "line": {"width": 2, "color": "#000"}}))
    fig.add_hline(y=1.0, line={"color": "#7a7a7a", "dash": "dash", "width": 2}, annotation_text="plain 1.0×",
                  annotation_position="bottom right")
    beats = points is not None and not points.empty and float(points["modelled_speedup"].max()) >= 1.0
    subtitle = ("speed-up modelled, words differing measured" if beats or points is None or points.empty
                else "nothing here beats plain decoding (1.0×)")
    fig.update_xaxes(title=f"{measure} (%, measured)")
    fig.update_yaxes(title="speed-up (modelled)", rangemode="tozero")
    return finish(fig, title, subtitle, height=480)

