"""A finished (or computed, or recorded) run drawn for the Generate tab: every output by name, no model call.

`text_update` is what a visitor reads first (text, status, headline, legend, cards); `charts_update` the figures,
downloads and insight panel sent after it; `computed_update` both at once for a point of a run's grid that is
already computed (recorded or prefetched), which is how a re-route inside the grid needs no model.
"""

from __future__ import annotations

import json
from typing import Any

from app.exports import export_files
from app.grids import GRIDS, RunGrid, models_of
from app.prefetch import tier_shares
from app.settings import Settings
from app.views import cards, charts, render
from app.views.insight import insight_updates, prediction_markdown
from app.views.numbers import passes_ran, plural
from app.views.sensitivity import effect_line, same_run, shares_line
from core import summarize
from core.analysis.plain_pace import PLAIN_PACES
from core.sweeps.grid import Point, in_order
from core.trace import Trace

Update = dict[str, Any]


def timing_words(trace: Trace, recorded: dict | None = None) -> str:
    """How the wall clock of this run was measured, said plainly: replayed only when no pass ran."""
    if recorded is not None:
        live = recorded.get("live") or {}
        speed = live.get("tokens", 0) / live["wall_s"] if live.get("wall_s") else 0.0
        load = recorded.get("load_average") or [None]
        return (f"recorded (its live run: {speed:.1f} tokens/s on {recorded.get('machine', {}).get('processor', '?')}"
                f", load {load[0]}, {recorded.get('recorded', '')})")
    calls = [c for r in trace.rounds for c in r.calls]
    ran = sum(not c.from_memo for c in calls)
    if calls and ran == len(calls):
        return "measured wall clock"
    if not ran:
        return "replayed from the memo (no pass ran, so no wall clock)"
    return f"{passes_ran(trace)} (wall clock covers those {ran})"


def status_line(trace: Trace, phase: str, recorded: dict | None = None) -> str:
    """The status bar for a finished (or stopped) run: one line (CSS keeps it so), the rest in its tooltip."""
    m = summarize(trace)
    info = trace.models
    return (f"**{phase}** · {plural(m['tokens'], 'token')} in {plural(m['rounds'], 'round')} · "
            f"{timing_words(trace, recorded)} · "
            f"<span title=\"{info.get('num_layers')} layers · {info.get('dtype')} on {info.get('device')} · "
            f"drafter: {info.get('drafter')}\">{info['verifier']}</span>")


def plain_speed(trace: Trace, recorded: dict | None = None) -> tuple[float, str] | None:
    """Plain decoding's measured tokens/s on this machine for this verifier, and where it was measured."""
    if recorded is not None:
        plain = recorded.get("plain") or {}
        if plain.get("wall_s"):
            return plain["tokens"] / plain["wall_s"], "the recorded sweep's plain reference run"
        return None
    pace = PLAIN_PACES.get(trace.models)
    return (1 / pace.seconds_per_token, f"{pace.source}, this process") if pace else None


def text_update(trace: Trace, phase: str, recorded: dict | None = None) -> Update:
    """What a visitor reads first: the text, the status and the headline cards (cheap: no figure)."""
    metrics = summarize(trace)
    return {"tokens": render.tokens_html(trace), "status": status_line(trace, phase, recorded),
            "legend": render.legend_html(trace),
            "metrics": cards.metrics_html(metrics, trace, plain_speed(trace, recorded)),
            "metrics_json": json.loads(json.dumps(metrics, default=str)), "trace": trace,
            "headline": cards.headline_html(metrics, trace, measured=cards.measured_here(trace, recorded),
                                           recorded=recorded is not None),
            "effect": effect_line(trace)}


def prediction(trace: Trace | None, reliability: object, tau_accept: float, tau_slim: float) -> str:
    """The line above the charts while a threshold moves: the engine's own re-route where it is known (the
    run on screen when the pair lies in its gap, a computed point of its grid), else the teacher-forced
    estimate, labelled as rough (it routes each token alone: no rounds, no copy evidence, no audit)."""
    try:
        tau_accept, tau_slim = float(tau_accept), float(tau_slim)
    except (TypeError, ValueError):
        return prediction_markdown(None, tau_accept, tau_slim)
    if trace is not None and trace.tokens:
        if same_run(trace, tau_accept, tau_slim):
            return shares_line(tier_shares(trace), tau_accept, tau_slim, "exactly the run on screen (these "
                               "thresholds decide every token as it was decided)")
        config = trace.config
        grid = GRIDS.find(trace.prompt, config, models_of(trace))
        known = grid.trace(Point(*in_order(tau_accept, tau_slim), config.gamma)) if grid else None  # exactly these
        if known is not None:
            return shares_line(tier_shares(known), tau_accept, tau_slim, "the engine's re-route, computed ahead")
        rough = prediction_markdown(reliability, tau_accept, tau_slim, config.draft_signal, config.slim_signal)
        return "Rough estimate, teacher-forced one token a round on the text shown: " + rough
    return prediction_markdown(reliability, tau_accept, tau_slim)


def charts_update(trace: Trace, settings: Settings, reliability: object = None, rerouted: bool = False) -> Update:
    """The figures, downloads and insight panel; sent after `text_update` so they never delay the text.
    A re-route (`rerouted`) reuses the last full run's reliability data, so its diagram is left as it is."""
    config = settings.config()
    update = {"strip_plot": charts.confidence_figure(trace, config.tau_accept, config.tau_slim),
              "timeline_plot": charts.timeline_figure(trace), "files": export_files(trace)}
    update.update(insight_updates(None, trace, config, reliability))
    update["prediction"] = prediction(trace, reliability, config.tau_accept, config.tau_slim)
    if rerouted:
        del update["reliability_plot"], update["reliability"]
    return update


def computed_update(grid: RunGrid, trace: Trace, settings: Settings, phase: str, rerouted: bool = True,
                    reliability: object = None) -> Update:
    """Every output for a computed point of `grid` (recorded or prefetched): no model runs. The charts read the
    grid's reliability data (the run's own text), else `reliability` (the session's last full run's)."""
    recorded = grid.recorded
    data = grid.reliability if grid.reliability is not None else reliability
    update = {**text_update(trace, phase, recorded), **charts_update(trace, settings, data, rerouted)}
    if not rerouted:  # a recorded screen opens with its own reliability data
        update["reliability"] = grid.reliability
    return update
