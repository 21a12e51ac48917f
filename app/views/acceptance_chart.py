"""Acceptance by draft position: for each position 1..gamma, the share of drafts whose token there reached the output,
stacked by the tier that kept it (tier 1: no verifier ran). The counts come from core.analysis.metrics
(AcceptanceCounts.to_dict, vLLM's per-position acceptance rate); this module only draws them."""

from __future__ import annotations

import plotly.graph_objects as go

from app.views.chart_style import finish
from app.views.reliability_chart import TIER_COLOURS, TIER_LABELS


def acceptance_figure(halves: dict[str, dict] | None) -> go.Figure:
    """Stacked bars per draft position, one group per half ("tuning", "held apart"), from each half's `serving`."""
    fig = go.Figure()
    if not halves:
        fig.add_annotation(text="Tune over a prompt file to see acceptance by draft position", showarrow=False,
                           x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return finish(fig, "Acceptance by draft position")
    for half, serving in halves.items():
        drafts = max(int(serving["drafts"]), 1)
        width = len(serving["accepted_per_pos"])
        positions = [[half] * width, [str(i + 1) for i in range(width)]]  # grouped axis: half, then position
        for tier, counts in sorted(serving["by_tier_per_pos"].items()):
            fig.add_trace(go.Bar(x=positions, y=[n / drafts for n in counts], name=TIER_LABELS[int(tier)],
                                 marker={"color": TIER_COLOURS[int(tier)]}, legendgroup=str(tier),
                                 showlegend=half == next(iter(halves)),
                                 hovertemplate="%{x}: %{y:.2f} of drafts<extra>%{fullData.name}</extra>"))
    lengths = ", ".join(f"{h} {s['mean_acceptance_length']:.2f}" for h, s in halves.items())
    fig.update_layout(barmode="stack", yaxis={"title": "share of drafts kept", "range": [0, 1.05]},
                      xaxis={"title": None})  # the grouped labels name the half and the position
    return finish(fig, "Acceptance by draft position", f"mean acceptance length: {lengths}")
