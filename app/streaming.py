"""One generation for the Generate tab, as a stream of updates keyed by output name.

Knows nothing about widgets: it yields dicts like `{"tokens": html, "status": line}` and the tab
maps names to components. `app.tools.live_benchmark` drives the same stream without a browser.
While tokens stream only the text and the status are sent; the text is "Done" as soon as it is done, and
fidelity and reliability are measured after it (the cards say so meanwhile); metrics, charts and files go
once, at the end. A browser page's VIA-SD run leaves its reliability data to the background, after the τ_accept
line (`_reliability`): its charts follow with the page's poll (`reliability_update`).
A re-route to a point of the run's grid that is already computed (recorded or
prefetched) runs no model: its trace is drawn as it is (app.run_views.computed_update).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from app import live_load
from app.fidelity_cache import FIDELITY
from app.grids import GRIDS, models_of
from app.late_reliability import LATE, LATE_FIDELITY
from app.late_reliability import waiting as late_waiting
from app.model_thread import lend_turn
from app.prefetch import PREFETCHER
from app.recorded import models_named
from app.run_views import charts_update, computed_update, export_files, prediction, status_line, text_update
from app.session import SESSIONS
from app.settings import Settings
from app.views import cards, render
from app.views.insight import insight_updates, measure_reliability
from app.views.page_grid import FEED
from core import ModelBundle, iter_generate, summarize
from core.analysis.plain_pace import PLAIN_PACES, PROBE_TOKENS, warm_up
from core.limits import RUN_TIME_BUDGET_S
from core.trace import Trace

__all__ = ["LIVE", "drain", "export_files", "prediction", "reroute_refusal", "run", "status_line", "text_update"]

STREAM_EVERY_S = 0.25
"""Minimum time between streamed updates: a replay produces rounds far faster than a browser repaints."""
REROUTE_THREADS = 1
"""torch threads while a re-route replays from the memo. A replay is hundreds of small tensor operations
(stacking memo rows, softmax, argmax); with two OpenMP threads on a shared 2-core CPU each one waits at a
barrier for a descheduled thread: the opening preset's replay took 28-1291 ms with 2 threads and 14-24 ms
with 1, interleaved in one run at load average 3.9 (/tmp profiling, README "Live re-routing")."""

Update = dict[str, Any]
RUN_THREADS = torch.get_num_threads()
"""torch threads of every other model event, set explicitly: a cancelled re-route's thread may still hold
REROUTE_THREADS for a moment, and Run must not inherit them."""
LIVE = ("tau_accept", "tau_slim", "gamma")
"""What a re-route may change; everything else (the prompt included) is a new run, which only Run starts."""


def reroute_refusal(settings: Settings, previous: Trace | None) -> str | None:
    """Why releasing a threshold should not re-route now (None: it should): the widgets describe a different
    run than the one on screen (say a new prompt was typed). Without this a threshold typed after a new
    prompt started a full generation that Run then waited behind. With no run on screen a
    re-route is simply a run with these thresholds."""
    if previous is None:
        return None
    shown = previous.config
    changed = {name for name in Settings.names() if name not in LIVE
               and getattr(Settings.of(shown, previous.prompt), name) != getattr(settings, name)}
    if changed - {"temperature", "top_p"} or (settings.sampling and changed):
        return "Thresholds set for the next run: the prompt or settings changed since the run shown, press **Run**."
    return None


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with `count` torch threads; model events run one at a time, so the process-wide
    setting only ever affects the event that set it."""
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(RUN_THREADS)


PAGE_DRAWN = ("tokens", "headline", "legend", "why")
"""What the page draws itself for a point of its grid (app/static/viasd.js), byte for byte as the server would."""


def grid_point(settings: Settings, previous: Trace | None, session: str, phase: str,
               started: float, reliability: object = None) -> tuple[Settings, Update | None]:
    """A re-route inside the run's grid: the sliders snapped to the grid's nearest point (the page shows that
    point too), and every output when that point is computed (no model runs); (settings, None) otherwise. A
    recorded grid whose models this visitor has not loaded says so instead of loading them for a slider."""
    if previous is None:
        return settings, None
    config = settings.config()
    grid = GRIDS.find(settings.prompt, config, models_of(previous))
    if grid is None:
        return settings, None
    point = grid.grid.snap(config.tau_accept, config.tau_slim, config.gamma)
    if point is not None:
        grid.look_at(point)  # the prefetch computes this τ_accept line next
        settings = settings.with_(tau_accept=point.tau_accept, tau_slim=point.tau_slim, gamma=point.gamma)
        found = grid.trace(point)
        if found is not None:
            update = computed_update(grid, found, settings, phase, reliability=reliability)
            if FEED.holds(session, grid, point.key):  # the page drew it at the notch; an answer landing after a
                update = {k: v for k, v in update.items() if k not in PAGE_DRAWN}  # later notch must not redraw
            shown = (phase or "Done").format(seconds=time.perf_counter() - started)
            return settings, {**update, "status": status_line(found, shown, grid.recorded)}
    recorded_models = live_load.wanted(*models_named(grid.recorded))
    if grid.recorded is not None and not live_load.loaded_for(session, recorded_models):
        axes = grid.grid
        return settings, {"status": (
            f"τ_accept {config.tau_accept:g}, τ_slim {config.tau_slim:g}, γ {config.gamma} lie outside the recorded "
            f"grid (τ_accept {axes.tau_accept[0]:g}–{axes.tau_accept[-1]:g}, τ_slim "
            f"{', '.join(f'{v:g}' for v in axes.tau_slim)}, γ {', '.join(map(str, axes.gamma))}): press **Run it "
            "live** to load the models; after that any value re-routes.<span data-stale=\"1\"></span>")}
    return settings, None


def _eta(settings: Settings, previous: Trace) -> str:
    """' (about 12 s at this run's pace)' for a point of the run's grid not computed yet ('' when unknown)."""
    grid = GRIDS.find(settings.prompt, settings.config(), models_of(previous))
    pace = grid.pace_s() if grid is not None else 0.0
    return f" (about {pace:.0f} s at this run's pace)" if pace >= 1 else ""


def run(settings: Settings, session: str, *, replay: bool, phase: str = "", previous: Trace | None = None,
        reliability: object = None, models: tuple[str, str] | None = None) -> Iterator[Update]:
    """Generate, streaming the coloured text each round; "Done" with the text, then fidelity and charts.

    With `previous` (a re-route), a computed point is shown at once; otherwise the part of the old text not yet
    re-decided stays on screen, faded, while the new routing streams in, and the reliability data of the last
    full run (`reliability`) is reused instead of measured again. `models` (verifier, drafter) are loaded for
    this session first when it does not have them (progress streamed in the status line).
    """
    started = time.perf_counter()
    seconds = lambda: time.perf_counter() - started  # noqa: E731
    settings, done = grid_point(settings, previous, session, phase, started, reliability)
    if done is not None:
        yield done
        return
    config = settings.config()
    if previous is None:  # a new run: the page's grid (another run's points) must not be drawn over it
        LATE.wait_for(session, None)
        LATE_FIDELITY.wait_for(session, None)
        yield {"grid_data": FEED.full(session, None), "grid_timer": False}
    if models is not None:
        for line in live_load.ensure(session, models):
            yield {"status": f"… {line}", "headline": cards.headline_html({}, progress=line)}
    if not SESSIONS.is_loaded() and SESSIONS.choice(session) is None:
        yield {"status": "… Loading the model (first use only, a few seconds)…"}
    if reliability is not None:  # the new thresholds' predicted tier shares, before any model runs
        yield {"prediction": prediction(previous, reliability, config.tau_accept, config.tau_slim)}
    bundle = SESSIONS.bundle(session)
    if previous is not None:  # a far move: its passes are not in the memo yet, so say so beside the sliders at once
        yield {"headline": cards.headline_html(summarize(previous), previous, progress="Re-routing: the model runs "
                                               "the passes these thresholds need for the first time" +
                                               _eta(settings, previous) + "…")}
    label = "Running" if replay else "Running every pass for real (honest timing)"
    # a re-route replays in tens of ms: stream its progress only when it takes longer than one repaint interval
    trace, last = None, (time.perf_counter() if previous is not None else 0.0)
    threads = REROUTE_THREADS if previous is not None and replay else RUN_THREADS
    with SESSIONS.job(session) as should_stop, PREFETCHER.foreground(), torch_threads(threads):
        if previous is None and config.mode != "plain" and not PLAIN_PACES.known_for(bundle):
            yield {"status": f"… Warming the model up: {PROBE_TOKENS} plain passes, once (plain's pace, for the "
                   "measured speed-up)…"}
            warm_up(bundle)
        for trace in iter_generate(bundle, settings.prompt, config, replay=replay, should_stop=should_stop,
                                   time_budget_s=RUN_TIME_BUDGET_S):
            if time.perf_counter() - last < STREAM_EVERY_S:
                continue
            last = time.perf_counter()
            progress = f"{label}: {len(trace.tokens)}/{config.max_new_tokens} tokens, round {len(trace.rounds)}"
            cut = len(trace.rolled_back)  # the text may shrink between updates: an audit cut it back
            progress += (f", the audit cut {cut} token{'s' * (cut != 1)} so far…" if cut else "…")
            lend_turn()  # between two rounds: a slider waiting for the model re-routes now, not after this run
            yield {"tokens": render.tokens_html(trace, pending=previous), "status": f"… {progress}",
                   "headline": cards.headline_html(summarize(trace), progress=progress)}
        if trace is None:
            return
        stopped, reference_later = trace.partial, False
        PLAIN_PACES.note(trace)  # a plain run every pass of which ran here: plain's pace for the runs after it
        if stopped:
            phase = f"Stopped early: partial result ({trace.stop_reason})"
        elif not phase:
            phase = "Done" if replay else "Done (real timing)"
        phase = phase.format(seconds=seconds())
        if not stopped:  # the text is final: say so now, then measure how far it is from the full model's
            yield {**text_update(trace, phase), "status": status_line(trace, phase) + " · measuring fidelity…"}
            later = previous is None and _fidelity_later(trace, session)  # a page: its grid's points in part, then all
            if previous is None and FIDELITY.tiers_first(bundle, trace):  # reduced precision: the tiers' part first
                reference_later = later  # the full model's plain answer after the line too
                if not later:
                    yield {**text_update(trace, phase), "status": status_line(trace, phase) + " · decoding the full "
                           "model's plain answer (to split numerics from tiers)…"}
            if not reference_later:
                FIDELITY.attach(bundle, trace)
            if previous is None:
                reliability = yield from _reliability(bundle, trace, phase, session)
    text = text_update(trace, phase)
    follow = [what for what, later in (("the reliability charts", reliability is None),
                                       ("the full model's plain answer (numerics apart)", reference_later)) if later]
    if previous is None and late_waiting(session) and follow:
        text["status"] += " · " + " and ".join(follow) + " follow the τ_accept line"
    yield text
    # the last update repeats the text: an API caller's result is the last update alone, and Gradio sends
    # each output as a diff against the previous update, so the browser receives only the figures
    final = {**text, **charts_update(trace, settings, reliability, rerouted=previous is not None)}
    grid = GRIDS.for_trace(trace) if not stopped and config.mode == "via" else None
    if grid is not None and grid.reliability is None and reliability is not None and previous is None:
        grid.reliability = reliability  # the run's own text: every point of its grid charts against it
    if grid is not None:
        if previous is None or not FEED.holds_grid(session, grid):
            final["grid_data"] = FEED.full(session, grid)
        elif (more := FEED.more(session, GRIDS)[0]) is not None:  # a re-route: only the points the page lacks
            final["grid_data"] = more
        final["grid_timer"] = bool(grid.missing()) or late_waiting(session)
    elif previous is None:
        final["grid_data"] = FEED.full(session, None)
    yield final
    if grid is not None:  # after the last update, so the figures are not sent while it computes
        PREFETCHER.schedule(bundle, grid)


def _reliability(bundle: ModelBundle, trace: Trace, phase: str, session: str) -> Iterator[Update]:
    """The run's reliability data (its return value), measured now, or None when its background measures it
    after the τ_accept line: a browser page's VIA-SD run, whose grid the visitor drags next. Three teacher-forced
    passes (about 2 s for 96 positions of the 1.5B model on 2 cores) would otherwise stand between Done and the
    line's first point; the page's poll brings the charts when they exist (`reliability_update`). An API caller
    reads the last update alone, so its run measures them here, as does any other mode (no grid to wait for)."""
    grid = GRIDS.find(trace.prompt, trace.config, models_of(trace)) if trace.config.mode == "via" else None
    if grid is not None and grid.reliability is not None:  # this run's text, measured before
        return grid.reliability
    if trace.config.mode == "via" and FEED.is_page(session):
        grid = GRIDS.for_trace(trace)
        grid.reliability_later = True
        LATE.wait_for(session, grid)
        return None
    yield {**text_update(trace, phase), "status": status_line(trace, phase) + " · measuring reliability…"}
    return measure_reliability(bundle, trace, trace.config)


def _fidelity_later(trace: Trace, session: str) -> bool:
    """Whether the run's grid points are measured in part until its τ_accept line is computed (a browser page's
    VIA-SD run): words differing as each lands (what the page draws), their token agreement after the line (a
    teacher-forced pass each, 40 % of a line's work on two cores), and in reduced precision the full model's plain
    answer too (a pass per token, longer than the whole line; the run's own words differing are then against its
    classic-SD twin). docs/benchmarks.md; the page's poll brings the grid again (`reliability_update`)."""
    if trace.config.mode != "via" or not FEED.is_page(session):
        return False
    grid = GRIDS.for_trace(trace)
    grid.fidelity_later = True
    LATE_FIDELITY.wait_for(session, grid)
    return True


def reliability_update(session: str, trace: Trace | None) -> Update | None:
    """What the background measured after the line, for the page's poll (app.tabs.generate), each once: the charts
    that read the run's reliability data, and the grid again once its points' fidelity is complete (token agreement;
    in reduced precision words differing against the full model's plain answer); None while neither is new."""
    update: Update = {}
    grid = LATE.arrived(session)
    if grid is not None and trace is not None:
        data, config = grid.reliability, trace.config
        insight = insight_updates(None, trace, config, data)
        update.update({"conf_plot": insight["conf_plot"], "reliability_plot": insight["reliability_plot"],
                       "reliability": data, "prediction": prediction(trace, data, config.tau_accept, config.tau_slim)})
    grid = LATE_FIDELITY.arrived(session)
    if grid is not None:  # the page redraws the point it shows from it (a headline sent from here would overwrite
        update["grid_data"] = FEED.full(session, grid, refresh=True)  # another point the visitor chose)
    return update or None


def drain(updates: Iterator[Update], on_update: Callable[[Update], None] | None = None) -> Update:
    """Consume a stream, merging its updates into one dict (benchmarks and tests)."""
    merged: Update = {}
    for update in updates:
        merged.update(update)
        if on_update is not None:
            on_update(update)
    return merged
