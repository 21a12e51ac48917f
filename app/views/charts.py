"""Plotly figures of a trace: confidences against the thresholds and the per-round cost timeline.

Figures only read traces and tables; they never run a model. Every figure can be saved as a PNG
from plotly's modebar (camera icon).
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import words
from app.views.chart_style import finish
from app.views.grid_chart import tradeoff_figure
from app.views.render import OUTCOMES, shown_round
from core.analysis.metrics import summarize
from core.round_policy import switched_off
from core.trace import Trace
from core.vocabulary import Outcome

ROLE_COLOURS = {"drafter": "#009E73", "slim": "#56B4E9", "full": "#E69F00"}
__all__ = ["ROLE_COLOURS", "confidence_figure", "timeline_figure", "tradeoff_figure"]  # tradeoff: app.tabs.generate
OUTCOME_SYMBOLS = {Outcome.DIRECT_ACCEPT: "circle", Outcome.SLIM_ACCEPT: "square", Outcome.SLIM_REGENERATE: "square-x",
                   Outcome.FULL_ACCEPT: "diamond", Outcome.FULL_CORRECT: "x", Outcome.FULL_BONUS: "star",
                   Outcome.PLAIN: "circle-open"}


def _layout(fig: go.Figure, title: str, height: int = 420, subtitle: str = "") -> go.Figure:
    return finish(fig, title, subtitle, height)


def _jitter(i: int) -> float:
    """Deterministic jitter so a strip plot looks the same on every re-render."""
    return (math.sin(i * 12.9898) * 43758.5453) % 1.0 * 0.6 - 0.3


def confidence_figure(trace: Trace | None, tau_accept: float, tau_slim: float) -> go.Figure:
    """Strip plot of drafter and slim confidences per token, coloured by outcome, with the thresholds: a trace's
    as its policy applied them (a tier off in its mode, or switched off, draws a note instead of a line)."""
    if trace is not None:
        tau_accept, tau_slim = trace.policy.tau_accept, trace.policy.tau_slim
    fig = go.Figure()
    rows = {"drafter": 1.0, "slim verifier": 0.0}
    if trace is not None:
        for outcome, (colour, _, _) in OUTCOMES.items():
            label = words.name("outcome", outcome)
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
    off = f" in {trace.policy.name}" if trace is not None and trace.policy.name != "VIA-SD" else ""
    lines = (("τ_accept", tau_accept, (0.55, 1.45, 1.5), {"color": "#009E73"}),
             ("τ_slim", tau_slim, (-0.45, 0.45, -0.5), {"color": "#0072B2", "dash": "dash"}))
    for name, tau, (y0, y1, y), style in lines:
        anchor = "bottom" if y > 0 else "top"
        if switched_off(tau):  # the tier takes nothing: no line to read right of
            fig.add_annotation(x=0.98, y=y, text=f"{name}: tier off{off}", showarrow=False, yanchor=anchor,
                               xanchor="right", font={"color": "#7a7a7a"})
            continue
        fig.add_shape(type="line", x0=tau, x1=tau, y0=y0, y1=y1, line={"width": 3, **style})
        fig.add_annotation(x=tau, y=y, text=f"{name} = {tau:.2f}", showarrow=False, yanchor=anchor)
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
            fig.add_trace(go.Bar(x=df["round"], y=df[f"{role}_cost_units"],
                                 name=f"{words.name('role', role)} cost (modelled)",
                                 marker_color=colour,
                                 customdata=df[[f"{role}_calls", "models_run", "accepted", "emitted"]],
                                 hovertemplate=("round %{x}: %{y:.2f} units, %{customdata[0]} call(s)<br>"
                                                "ran: %{customdata[1]} · kept %{customdata[2]} drafts, "
                                                "emitted %{customdata[3]}<extra>" + role + "</extra>")),
                          secondary_y=False)
        replayed = not summarize(trace)["timing_complete"]  # the one definition, in core.analysis.metrics
        ran = any(not c.from_memo for r in trace.rounds for c in r.calls)
        note = (" — partly replayed, covers the passes that ran" if ran else " — replayed, not meaningful") \
            if replayed else ""
        fig.add_trace(go.Scatter(x=df["round"], y=df["wall_s"] * 1000, mode="lines+markers",
                                 name="wall time, ms (measured)" + note,
                                 line={"color": "#7a7a7a", "dash": "dot" if replayed else "solid"}),
                      secondary_y=True)
        fig.add_hline(y=1.0, line_dash="dot", line_color="#999999", annotation_text="1 plain token",
                      annotation_position="top left", secondary_y=False)
    else:
        fig.update_xaxes(range=[0, 10])  # an empty chart's axes start at 0, not plotly's -1
        fig.update_yaxes(range=[0, 1], secondary_y=False)
        fig.update_yaxes(range=[0, 1], secondary_y=True)
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", text="run a generation to see its rounds",
                           showarrow=False)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="round")
    fig.update_yaxes(title="cost units (full passes, modelled)", secondary_y=False)
    fig.update_yaxes(title="wall ms (measured)", secondary_y=True, showgrid=False)
    return _layout(fig, "Per round: models run, cost, time", subtitle="cost modelled (bars), wall time measured (line)")
