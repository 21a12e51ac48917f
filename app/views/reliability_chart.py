"""Reliability views: is a tier right when it is confident? Plotly figures over core.analysis.reliability data.

Everything here reads a `ReliabilityData` (one teacher-forced pass per model over the current
text, made once by `core.analysis.reliability.measure`) and runs no model, so a threshold slider can update
these views and the predicted tier shares on every move (well under 50 ms). Predicted numbers carry
the label PREDICTED_LABEL; the real run's measured shares come later, from the trace.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import words
from app.views.chart_style import finish
from app.views.charts import ROLE_COLOURS
from core.analysis.prediction import TierPrediction, predict_tiers
from core.analysis.reliability import (
    PREDICTED_LABEL,
    ModelSignals,
    ReliabilityData,
    coverage_precision,
    reliability_bins,
)
from core.round_policy import switched_off
from core.vocabulary import Tier

AGREE_COLOURS = {True: "#009E73", False: "#D55E00"}  # Okabe-Ito green / vermillion
TIER_COLOURS = {1: "#009E73", 2: "#56B4E9", 3: "#E69F00"}
TIER_LABELS = {tier.value: words.name("tier", tier) for tier in Tier}
ROLES = {"drafter": "drafter (tier 1)", "slim": "slim verifier (tier 2)"}


def _layout(fig: go.Figure, title: str, height: int = 420, note: str = "") -> go.Figure:
    """The house layout; every view here is predicted, so its second line says so."""
    return finish(fig, title, PREDICTED_LABEL + (f"; {note}" if note else ""), height)


def _signals(data: ReliabilityData, role: str) -> ModelSignals:
    return data.drafter if role == "drafter" else data.slim


def _drafted(data: ReliabilityData, role: str) -> np.ndarray:
    """Positions that count for a role: the drafter only where it proposed a token."""
    return data.drafter.drafted if role == "drafter" else np.ones(len(data), bool)


def reliability_figure(data: ReliabilityData | None, draft_signal: str = "prob", slim_signal: str = "prob",
                       bins: int = 10) -> go.Figure:
    """Reliability diagram: agreement with the full model per confidence bin, drafter and slim verifier.
    On the diagonal, a confidence of 0.8 means agreeing 80 % of the time."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="calibrated (agreement = confidence)",
                             line={"color": "#999999", "dash": "dot"}, hoverinfo="skip"))
    if data is not None and len(data):
        for role, signal in (("drafter", draft_signal), ("slim", slim_signal)):
            keep = _drafted(data, role)
            signals = _signals(data, role)
            table = reliability_bins(signals.confidence[signal][keep], signals.agree[keep], bins)
            table = table[table["count"] > 0]
            centre = (table["bin_lo"] + table["bin_hi"]) / 2
            fig.add_trace(go.Scatter(
                x=centre, y=table["agreement"], mode="lines+markers", name=f"{ROLES[role]}, {signal}",
                marker={"color": ROLE_COLOURS[role], "size": 6 + 14 * np.sqrt(table["count"] / table["count"].max())},
                line={"color": ROLE_COLOURS[role], "width": 3},
                customdata=np.stack([table["bin_lo"], table["bin_hi"], table["count"]], axis=-1),
                hovertemplate="confidence %{customdata[0]:.1f}-%{customdata[1]:.1f}: %{customdata[2]} tokens<br>"
                              "agreement with full %{y:.2f}<extra></extra>"))
    fig.update_xaxes(range=[0, 1], title="confidence (bin centre)")
    fig.update_yaxes(range=[-0.02, 1.02], title="agreement with the full model")
    return _layout(fig, "Is each confidence right?", note="size = tokens")


def coverage_precision_figure(data: ReliabilityData | None, tau_accept: float, tau_slim: float,
                              draft_signal: str = "prob", slim_signal: str = "prob") -> go.Figure:
    """Coverage (share of tokens a tier would take) and precision (share of those it gets right)
    against its threshold, tier 1 beside tier 2, with the current thresholds marked."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("tier 1: drafter vs τ_accept", "tier 2: slim vs τ_slim"))
    taus = np.round(np.linspace(0.0, 0.99, 100), 3)
    if data is not None and len(data):
        for col, (role, signal) in enumerate((("drafter", draft_signal), ("slim", slim_signal)), start=1):
            signals = _signals(data, role)
            table = coverage_precision(signals.confidence[signal], signals.agree & _drafted(data, role), taus)
            for column, dash in (("coverage", "solid"), ("precision", "dash")):
                fig.add_trace(go.Scatter(x=table["tau"], y=table[column], mode="lines", name=f"{column} ({signal})",
                                         legendgroup=column, showlegend=col == 1,
                                         line={"color": ROLE_COLOURS[role], "dash": dash, "width": 3},
                                         hovertemplate="τ %{x:.2f}: " + column + " %{y:.2f}<extra></extra>"),
                              row=1, col=col)
    for col, tau in ((1, tau_accept), (2, tau_slim)):
        fig.add_vline(x=tau, line={"color": "#333333", "width": 2}, row=1, col=col,
                      annotation_text=f"τ = {tau:.2f}", annotation_position="top")
    fig.update_xaxes(range=[0, 1], title="threshold τ")
    fig.update_yaxes(range=[-0.02, 1.05])
    return _layout(fig, "Coverage and precision against τ")


def confidence_histogram_figure(data: ReliabilityData | None, tau_accept: float, tau_slim: float,
                                draft_signal: str = "prob", slim_signal: str = "prob", bins: int = 20) -> go.Figure:
    """Confidence histograms split by agree / disagree with the full model, with the τ lines: what
    sits right of a line is what that tier takes, and the red part of it is what it gets wrong."""
    titles = (f"drafter ({draft_signal}) and τ_accept", f"slim verifier ({slim_signal}) and τ_slim")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=titles)
    edges = {"start": 0.0, "end": 1.0 + 1e-9, "size": 1.0 / bins}
    if data is not None and len(data):
        for row, (role, signal) in enumerate((("drafter", draft_signal), ("slim", slim_signal)), start=1):
            signals, keep = _signals(data, role), _drafted(data, role)
            for agree in (True, False):
                chosen = keep & (signals.agree == agree)
                values = np.minimum(signals.confidence[signal][chosen], 1.0 - 1e-9)  # 1.0 goes in the last bin
                fig.add_trace(go.Histogram(
                    x=values, xbins=edges, name="agrees with full" if agree else "differs",
                    legendgroup=str(agree), showlegend=row == 1, marker={"color": AGREE_COLOURS[agree]},
                    hovertemplate="confidence %{x}: %{y} tokens<extra></extra>"), row=row, col=1)
    for row, (name, tau) in enumerate((("τ_accept", tau_accept), ("τ_slim", tau_slim)), start=1):
        if switched_off(tau):  # a tier switched off takes nothing: no line to read right of, only a note
            fig.add_annotation(x=0.98, y=0.95, xref="x domain", yref="y domain" if row == 1 else "y2 domain",
                               text=f"{name} off: this tier takes nothing", showarrow=False, xanchor="right")
            continue
        fig.add_vline(x=tau, line={"color": "#333333", "width": 3}, row=row, col=1,
                      annotation_text=f"{name} = {tau:.2f}",
                      annotation_position="top left" if tau > 0.6 else "top right")  # never clipped at the edge
    fig.update_layout(barmode="stack")
    if data is None or not len(data):
        fig.update_yaxes(range=[0, 1])  # an empty chart's axes start at 0, not plotly's -1
    fig.update_xaxes(range=[0, 1.0], title_text="confidence", row=2, col=1)
    fig.update_yaxes(title_text="tokens")
    return _layout(fig, "Confidence, split by agreement", height=520)


def predicted_tier_shares(data: ReliabilityData | None, tau_accept: float, tau_slim: float,
                          draft_signal: str = "prob", slim_signal: str = "prob") -> TierPrediction | None:
    """Predicted share of tokens per tier and predicted error rate for these thresholds: no model
    call, well under 50 ms (the slider handler calls this on every move)."""
    if data is None or not len(data):
        return None
    return predict_tiers(data, tau_accept, tau_slim, draft_signal, slim_signal)


def tier_shares_figure(prediction: TierPrediction | None, measured: dict[int, float] | None = None) -> go.Figure:
    """One stacked bar per source: predicted shares (teacher-forced) and, once the run lands, the measured ones."""
    fig = go.Figure()
    bars = []
    if prediction is not None:
        bars.append((f"predicted<br>(error {prediction.error_rate:.1%})", prediction.tier_share))
    if measured:
        bars.append(("measured<br>(the real run)", measured))
    for tier in (1, 2, 3):
        fig.add_trace(go.Bar(y=[label for label, _ in bars], x=[shares.get(tier, 0.0) for _, shares in bars],
                             orientation="h", name=TIER_LABELS[tier], marker={"color": TIER_COLOURS[tier]},
                             hovertemplate="%{x:.1%} of tokens<extra>" + TIER_LABELS[tier] + "</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title="share of tokens")
    return _layout(fig, "Tokens per tier: predicted vs measured", height=280)


def prediction_text(prediction: TierPrediction | None) -> str:
    """One line for a card: the predicted shares and error rate, labelled as predicted."""
    if prediction is None:
        return "No reliability data yet: run a generation first."
    s = prediction.tier_share
    label = prediction.label[:1].upper() + prediction.label[1:]
    exact = " (exact: a re-route routes this very text so)" if prediction.exact else ""
    return (f"{label}{exact} ({prediction.tokens} tokens), for these thresholds: tier 1 {s[1]:.0%}, tier 2 "
            f"{s[2]:.0%}, tier 3 {s[3]:.0%}; tokens differing from the full model {prediction.error_rate:.1%}.")
