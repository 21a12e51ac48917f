"""Plotly figures of a trace: confidences against the thresholds, per-round cost timeline, trade-off grid.

Figures only read traces and tables; they never run a model. Every figure can be saved as a PNG
from plotly's modebar (camera icon).
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views.render import OUTCOMES, shown_round
from core.analysis.metrics import summarize
from core.decoding.tiers import Outcome
from core.trace import Trace

FONT = {"size": 15}
ROLE_COLOURS = {"drafter": "#009E73", "slim": "#56B4E9", "full": "#E69F00"}
OUTCOME_SYMBOLS = {Outcome.DIRECT_ACCEPT: "circle", Outcome.SLIM_ACCEPT: "square", Outcome.SLIM_REGENERATE: "square-x",
                   Outcome.FULL_ACCEPT: "diamond", Outcome.FULL_CORRECT: "x", Outcome.FULL_BONUS: "star",
                   Outcome.PLAIN: "circle-open"}


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(title={"text": title}, template="plotly_white", font=FONT, height=height,
                      margin={"l": 60, "r": 20, "t": 70, "b": 50}, legend={"orientation": "h", "y": -0.18})
    return fig


def _jitter(i: int) -> float:
    """Deterministic jitter so a strip plot looks the same on every re-render."""
    return (math.sin(i * 12.9898) * 43758.5453) % 1.0 * 0.6 - 0.3


def confidence_figure(trace: Trace | None, tau_accept: float, tau_slim: float) -> go.Figure:
    """Strip plot of drafter and slim confidences per token, coloured by outcome, with the thresholds."""
    fig = go.Figure()
    rows = {"drafter": 1.0, "slim verifier": 0.0}
    if trace is not None:
        for outcome, (colour, label, _) in OUTCOMES.items():
            for row, attr in (("drafter", "draft_confidence"), ("slim verifier", "slim_confidence")):
                pts = [t for t in trace.tokens if t.outcome == outcome and getattr(t, attr) is not None]
                if not pts:
                    continue
                fig.add_trace(go.Scatter(
                    x=[getattr(t, attr) for t in pts], y=[rows[row] + _jitter(t.position) for t in pts],
                    mode="markers", name=label, legendgroup=outcome, showlegend=row == "drafter" or not any(
                        t.draft_confidence is not None for t in trace.tokens if t.outcome == outcome),
                    marker={"color": colour, "size": 11, "symbol": OUTCOME_SYMBOLS[outcome],
                            "line": {"width": 1, "color": "#333333"}},
                    text=[f"{t.text!r} (token {t.position}, round {shown_round(t.round)})" for t in pts],
                    hovertemplate="%{text}<br>confidence %{x:.3f}<extra>" + label + "</extra>"))
    fig.add_shape(type="line", x0=tau_accept, x1=tau_accept, y0=0.55, y1=1.45, line={"color": "#009E73", "width": 3})
    fig.add_shape(type="line", x0=tau_slim, x1=tau_slim, y0=-0.45, y1=0.45,
                  line={"color": "#0072B2", "width": 3, "dash": "dash"})
    fig.add_annotation(x=tau_accept, y=1.5, text=f"τ_accept = {tau_accept:.2f}", showarrow=False, yanchor="bottom")
    fig.add_annotation(x=tau_slim, y=-0.5, text=f"τ_slim = {tau_slim:.2f}", showarrow=False, yanchor="top")
    fig.update_xaxes(range=[-0.02, 1.02], title="confidence")
    fig.update_yaxes(tickvals=list(rows.values()), ticktext=list(rows.keys()), range=[-0.95, 1.8])
    if trace is None or not trace.tokens:
        fig.add_annotation(x=0.5, y=0.5, text="run a generation to see confidences", showarrow=False)
    return _layout(fig, "Confidence vs thresholds")


def timeline_figure(trace: Trace | None) -> go.Figure:
    """Per round: modelled cost units of each model that ran (bars) and measured wall time (line)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    if trace is not None and trace.rounds:
        df = trace.rounds_dataframe()
        df["round"] = df["round"].map(shown_round)  # on screen rounds count from 1 (the CSV keeps 0-based)
        for role, colour in ROLE_COLOURS.items():
            fig.add_trace(go.Bar(x=df["round"], y=df[f"{role}_cost_units"], name=f"{role} cost (modelled)",
                                 marker_color=colour,
                                 customdata=df[[f"{role}_calls", "models_run", "accepted", "emitted"]],
                                 hovertemplate=("round %{x}: %{y:.2f} units, %{customdata[0]} call(s)<br>"
                                                "ran: %{customdata[1]} · kept %{customdata[2]} drafts, "
                                                "emitted %{customdata[3]}<extra>" + role + "</extra>")),
                          secondary_y=False)
        replayed = not summarize(trace)["timing_complete"]  # the one definition, in core.analysis.metrics
        fig.add_trace(go.Scatter(x=df["round"], y=df["wall_s"] * 1000, mode="lines+markers",
                                 name="wall time, ms (measured)" + (" — replayed, not meaningful" if replayed else ""),
                                 line={"color": "#000000", "dash": "dot" if replayed else "solid"}),
                      secondary_y=True)
        fig.add_hline(y=1.0, line_dash="dot", line_color="#999999", annotation_text="1 plain token",
                      annotation_position="top left", secondary_y=False)
    else:
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", text="run a generation to see its rounds",
                           showarrow=False)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="round")
    fig.update_yaxes(title="cost units (full passes, modelled)", secondary_y=False)
    fig.update_yaxes(title="wall ms (measured)", secondary_y=True, showgrid=False)
    return _layout(fig, "Per round: models run, cost, time")


def _grouped(grid: pd.DataFrame, x: str) -> pd.DataFrame:
    """One row per distinct (x, speed-up) point, with every threshold pair that landed on it."""
    labels = [f"τa={a:g}, τs={s:g}" for a, s in zip(grid["tau_accept"], grid["tau_slim"], strict=True)]
    keyed = grid.assign(_x=grid[x].round(4), _y=grid["modelled_speedup"].round(4), _label=labels)
    return keyed.groupby(["_x", "_y"], as_index=False).agg(
        pairs=("_label", list), count=("_label", "size"), tau_accept=("tau_accept", "max"))


def tradeoff_figure(grid: pd.DataFrame | None, tau_accept: float, tau_slim: float) -> go.Figure:
    """Modelled speed-up against fidelity and against rejection rate over a threshold grid.

    Pairs that give identical results share one marker, drawn larger with its count ("×3") beside
    it and every pair in its hover text; the sliders' pair is starred.
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("speed-up vs full-model agreement",
                                                        "speed-up vs rejection rate"))
    if grid is not None and not grid.empty:
        current = ((grid["tau_accept"] - tau_accept).abs() < 1e-6) & ((grid["tau_slim"] - tau_slim).abs() < 1e-6)
        for col, x in ((1, "full_agreement"), (2, "rejection_rate")):
            points = _grouped(grid, x)
            fig.add_trace(go.Scatter(
                x=points["_x"], y=points["_y"], mode="markers+text", name="threshold pair",
                text=[f"×{n}" if n > 1 else "" for n in points["count"]], textposition="middle right",
                customdata=["<br>".join(p) for p in points["pairs"]], showlegend=col == 1,
                marker={"size": [12 + 4 * min(n - 1, 5) for n in points["count"]], "color": points["tau_accept"],
                        "colorscale": "Viridis", "line": {"width": 1, "color": "#333333"},
                        "showscale": col == 2, "colorbar": {"title": "τ_accept"}},
                hovertemplate="%{customdata}<br>speed-up %{y:.2f}×<br>" + x + " %{x:.3f}<extra></extra>"),
                row=1, col=col)
            if current.any():
                fig.add_trace(go.Scatter(
                    x=grid.loc[current, x], y=grid.loc[current, "modelled_speedup"], mode="markers",
                    name="current sliders", showlegend=col == 1,
                    marker={"size": 24, "symbol": "star", "color": "#D55E00", "line": {"width": 2, "color": "#000"}}),
                    row=1, col=col)
        fig.update_xaxes(title="full-model agreement", row=1, col=1)
        fig.update_xaxes(title="rejection rate", row=1, col=2)
    else:
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                           text="press “Run threshold grid” to fill this chart")
    fig.update_yaxes(title="speed-up (modelled accelerator)", row=1, col=1)
    return _layout(fig, "Threshold trade-off (speed-up modelled, fidelity measured; ×n = n pairs, same result)",
                   height=460)
