"""What `python -m core.tools.tune` finds (a target, the grid, its Pareto front, the pick) and the files it writes:
the grid and the front as CSV and JSON, and a plotly HTML of both."""

from __future__ import annotations

import json
from pathlib import Path

from core.analysis.tuning import SPEED, Target, TuneResult

__all__ = ["SPEED", "Target", "TuneResult", "front_figure", "write_outputs"]

def front_figure(result: TuneResult) -> object:
    """Plotly scatter of every grid point, the Pareto front as a line, the target and the pick."""
    import plotly.graph_objects as go

    metric = result.target.metric
    label = "words differing from the full model" if metric == "words_differing" else "token agreement"
    grid, front = result.grid, result.front
    hover = [f"τ_accept {r.tau_accept}, τ_slim {r.tau_slim}, γ {r.gamma}, {r.draft_signal}, {r.slim_route}"
             for r in grid.itertuples()]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=grid[metric], y=grid[SPEED], mode="markers", name="grid point", text=hover,
                             marker={"color": ["#009E73" if m else "#999999" for m in grid["meets_target"]], "size": 9},
                             hovertemplate="%{text}<br>%{x:.3f}, speed-up %{y:.2f}x<extra></extra>"))
    fig.add_trace(go.Scatter(x=front[metric], y=front[SPEED], mode="lines+markers", name="Pareto front",
                             line={"color": "#0072B2", "width": 3}))
    rec = result.recommended
    fig.add_trace(go.Scatter(x=[rec[metric]], y=[rec[SPEED]], mode="markers", name="recommended",
                             marker={"symbol": "star", "size": 20, "color": "#E69F00", "line": {"width": 1}}))
    fig.add_vline(x=result.target.ceiling, line={"dash": "dash", "color": "#D55E00"},
                  annotation_text=result.target.describe())
    fig.update_layout(template="plotly_white", title=f"Tuning: modelled speed-up vs {label} (tuning prompts)",
                      xaxis_title=label, yaxis_title="modelled speed-up over plain (x)", font={"size": 15})
    return fig


def write_outputs(result: TuneResult, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "tune_grid.csv", out / "pareto_front.csv", out / "pareto_front.json", out / "pareto_front.html"]
    result.grid.to_csv(paths[0], index=False)
    result.front.to_csv(paths[1], index=False)
    paths[2].write_text(json.dumps(result.to_dict(), indent=1, default=str) + "\n")
    front_figure(result).write_html(paths[3], include_plotlyjs="cdn")
    return paths
