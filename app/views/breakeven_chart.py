"""The break-even view: expected speed-up over plain as iso-curves over acceptance alpha and drafter cost c.

A pure figure function: it takes run points computed by `core.analysis.breakeven.run_point` (the app keeps
the session's earlier ones) and draws them on the curves of the current run's gamma and verifier
cost, beside the regime where the speculative decoding papers' pairs sit.
"""

from __future__ import annotations

import plotly.graph_objects as go

from core.analysis.breakeven import PUBLISHED, Regime, RunPoint, break_even_cost, expected_speedup

FONT = {"size": 15}
LEVELS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
MAX_COST = 1.2


def breakeven_figure(point: RunPoint | None, others: list[tuple[str, RunPoint]] | None = None, *,
                     gamma: float = 4, verify: float = 1.0, profile_label: str = "",
                     regime: Regime = PUBLISHED, steps: int = 61) -> go.Figure:
    """Iso-speed-up curves for (gamma, verify) — taken from `point` when given — with the run marked."""
    if point is not None:
        gamma, verify = point.gamma, point.verify
    alphas = [i / (steps - 1) for i in range(steps)]
    costs = [MAX_COST * i / (steps - 1) for i in range(steps)]
    z = [[expected_speedup(a, c, gamma, verify) for a in alphas] for c in costs]
    fig = go.Figure(go.Contour(
        x=alphas, y=costs, z=z, zmin=0.0, zmax=3.0, colorscale="RdBu", reversescale=False, zmid=1.0,
        contours={"coloring": "heatmap", "showlabels": True, "labelfont": {"size": 13, "color": "#222222"},
                  "start": LEVELS[0], "end": LEVELS[-1], "size": 0.25},
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
        fig.add_trace(_marker(point, "this run", "star", "#E69F00", 20))
    fig.update_xaxes(range=[0, 1], title="acceptance alpha (share of drafts kept)", tickformat=".0%")
    fig.update_yaxes(range=[0, MAX_COST], title="drafter cost c (full passes per draft token)")
    title = f"Expected speed-up over plain: {gamma:.3g} drafts per round, verification {verify:.2f} passes per round"
    if profile_label:
        title += f"<br><sup>cost profile: {profile_label}</sup>"
    fig.update_layout(title={"text": title},
                      template="plotly_white", font=FONT, height=480, margin={"l": 70, "r": 20, "t": 80, "b": 60},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def _marker(point: RunPoint, label: str, symbol: str, colour: str, size: int) -> go.Scatter:
    return go.Scatter(
        x=[point.alpha], y=[min(point.cost, MAX_COST)], mode="markers+text", name=label, text=[label],
        textposition="top center", marker={"symbol": symbol, "size": size, "color": colour,
                                           "line": {"width": 1.5, "color": "#222222"}},
        hovertemplate=(f"{label}<br>alpha {point.alpha:.2f}, c {point.cost:.2f}, {point.gamma:.1f} drafts/round, "
                       f"v {point.verify:.2f}<br>expected {point.speedup:.2f}x<extra></extra>"))
