"""What `python -m core.tools.tune` finds (a target, the grid, its Pareto front, the pick) and the files it writes:
the grid and the front as CSV and JSON, and a plotly HTML of both."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

SPEED = "modelled_speedup"
"""The speed column tuned for: the cost model's speed-up over plain decoding."""


@dataclass(frozen=True)
class Target:
    """A fidelity target: a ceiling on words differing, or a floor on token agreement.

    `over_classic_sd`: the ceiling is classic SD's own words differing in the same grid plus `value`. In bf16 a
    k-token pass alone moves words against plain greedy (numerics), so an absolute ceiling can exclude classic SD
    itself; the issue's target is "words differing <= classic SD's + 1 point"."""

    metric: str  # "words_differing" or "agreement"
    value: float
    over_classic_sd: bool = False
    classic_sd: float | None = None  # classic SD's words differing, once resolved against a grid

    def resolved(self, grid: pd.DataFrame) -> Target:
        """The target with classic SD's words differing read from `grid` (its least, over γ and draft cuts)."""
        if not self.over_classic_sd:
            return self
        classic = grid[(grid["tau_accept"] >= 1.0) & (grid["tau_slim"] >= 1.0)]
        if classic.empty:
            raise ValueError("a target relative to classic SD needs classic SD (both thresholds 1.0) in the grid")
        return replace(self, classic_sd=float(classic["words_differing"].min()))

    @property
    def ceiling(self) -> float:
        return self.value + (self.classic_sd or 0.0) if self.over_classic_sd else self.value

    def met(self, row: dict | pd.Series) -> bool:
        got = row[self.metric]
        return got <= self.ceiling + 1e-12 if self.metric == "words_differing" else got >= self.value - 1e-12

    def describe(self) -> str:
        if self.over_classic_sd:
            sd = "classic SD's" if self.classic_sd is None else f"classic SD's {self.classic_sd:.3f}"
            return f"words differing <= {sd} + {self.value:g}"
        return (f"words differing <= {self.value:g}" if self.metric == "words_differing"
                else f"token agreement >= {self.value:g}")


@dataclass
class TuneResult:
    """What `tune` found: every grid point with its pooled metrics, the Pareto front and the pick."""

    target: Target
    grid: pd.DataFrame
    front: pd.DataFrame
    recommended: dict
    held_apart: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"target": asdict(self.target), "recommended": self.recommended, "held_apart": self.held_apart,
                "pareto_front": self.front.to_dict(orient="records"), "grid_points": len(self.grid)}


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
