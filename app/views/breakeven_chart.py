"""The break-even view: expected speed-up over plain as iso-curves over acceptance alpha and drafter cost c.

A pure figure function: it takes run points computed by `core.analysis.breakeven.run_point` (the app keeps
the session's earlier ones) and draws them on the curves of the current run's gamma and verifier
cost, beside the regime where the speculative decoding papers' pairs sit.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from app.views.chart_style import finish
from core.analysis.breakeven import PUBLISHED, Regime, RunPoint, break_even_cost, expected_speedup

MAX_COST = 1.2
MIN_TOP = 3.0
"""The colour scale reaches at least 3×, and further when the run (or a compared run) is faster."""


def colour_top(points: list[RunPoint]) -> float:
    """Top of the colour scale: a whole number at or above every point's speed-up, at least MIN_TOP, so the
    scale always contains the run (an 8.65× run is never drawn on a scale that stops at 3)."""
    fastest = max((p.speedup for p in points if math.isfinite(p.speedup)), default=0.0)
    return float(max(MIN_TOP, math.ceil(fastest * 1.05)))


def breakeven_figure(point: RunPoint | None, others: list[tuple[str, RunPoint]] | None = None, *,
                     gamma: float = 4, verify: float = 1.0, profile_label: str = "",
                     regime: Regime = PUBLISHED, steps: int = 61, run_speedup: float | None = None) -> go.Figure:
    """Iso-speed-up curves for (gamma, verify) — taken from `point` when given — with the run marked.
    `run_speedup`: the whole run's modelled speed-up (the card's), named beside the drafting rounds' formula."""
    if point is not None:
        gamma, verify = point.gamma, point.verify
    alphas = [i / (steps - 1) for i in range(steps)]
    costs = [MAX_COST * i / (steps - 1) for i in range(steps)]
    z = [[expected_speedup(a, c, gamma, verify) for a in alphas] for c in costs]
    top = colour_top([point, *(p for _, p in others or [])] if point is not None else [p for _, p in others or []])
    step = 0.25 if top <= 3 else 0.5 if top <= 6 else 1.0 if top <= 12 else 2.0
    fig = go.Figure(go.Contour(
        x=alphas, y=costs, z=z, zmin=0.0, zmax=top, colorscale="RdBu", reversescale=False, zmid=1.0,
        contours={"coloring": "heatmap", "showlabels": True, "labelfont": {"size": 13, "color": "#222222"},
                  "start": 0.25 if step < 1 else step, "end": top, "size": step},
        line={"width": 0.5, "color": "#555555"}, opacity=0.75, name="expected speed-up",
        colorbar={"title": {"text": "speed-up"}},
        hovertemplate="alpha %{x:.2f}, c %{y:.2f}: %{z:.2f}x<extra></extra>"))
    edge = [(a, break_even_cost(a, gamma, verify)) for a in alphas]
    edge = [(a, c) for a, c in edge if c is not None and c <= MAX_COST]
    fig.add_trace(go.Scatter(x=[a for a, _ in edge], y=[c for _, c in edge], mode="lines", name="break-even (1.0x)",
                             line={"color": "#000000", "width": 4}, hoverinfo="skip"))
    fig.add_shape(type="rect", x0=regime.alpha[0], x1=regime.alpha[1], y0=regime.cost[0], y1=regime.cost[1],
                  line={"color": "#009E73", "width": 3}, fillcolor="rgba(0,158,115,0.15)")
    fig.add_annotation(x=sum(regime.alpha) / 2, y=regime.cost[1], yanchor="bottom", showarrow=False,
                       text="published SD pairs", font={"color": "#00664a"}, hovertext=regime.label)
    for label, other in others or []:
        fig.add_trace(_marker(other, label, "circle", "#CC79A7", 12))
    if point is not None:
        fig.add_trace(_marker(point, "this run", "star", "#E69F00", 20, run_speedup))
    # a little room past the plane, so a run at α 100 % or c 0 keeps its whole star
    fig.update_xaxes(range=[-0.04, 1.04], title="α: judged drafts that passed", tickformat=".0%")
    fig.update_yaxes(range=[-0.05, MAX_COST], title="drafter cost c (full passes per draft)")
    subtitle = f"γ {gamma:.3g} · checking {verify:.2f} passes per round"
    return finish(fig, "When does drafting pay?", subtitle + (f" · {profile_label}" if profile_label else ""),
                  height=480)


def _marker(point: RunPoint, label: str, symbol: str, colour: str, size: int,
            run_speedup: float | None = None) -> go.Scatter:
    whole = "" if run_speedup is None else f"<br>the whole run (the card): {run_speedup:.2f}× plain"
    return go.Scatter(
        x=[point.alpha], y=[min(point.cost, MAX_COST)], mode="markers+text", name=label, text=[label],
        textposition="top center", marker={"symbol": symbol, "size": size, "color": colour,
                                           "line": {"width": 1.5, "color": "#222222"}},
        hovertemplate=(f"{label}<br>α {point.alpha:.0%} of judged drafts passed, c {point.cost:.2f}, "
                       f"{point.gamma:.1f} drafted per round, checking {point.verify:.2f}<br>"
                       f"drafting rounds by the formula: {point.speedup:.2f}× plain{whole}<extra></extra>"))
