"""One generation for the Generate tab, as a stream of updates keyed by output name.

Knows nothing about widgets: it yields dicts like `{"tokens": html, "status": line}` and the tab
maps names to components. `app.tools.live_benchmark` drives the same stream without a browser.
While tokens stream only the text and the status are sent; metrics, charts and files go once,
at the end (re-sending figures on every step is what made re-routing slow).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from app.exports import export_files
from app.fidelity_cache import FIDELITY
from app.prefetch import PREFETCHER, tier_shares
from app.session import SESSIONS
from app.settings import Settings
from app.views import cards, charts, render
from app.views.insight import insight_updates, measure_reliability, prediction_markdown
from app.views.sensitivity import effect_line, reproduces, shares_line
from core import iter_generate, summarize
from core.limits import RUN_TIME_BUDGET_S
from core.trace import Trace

STREAM_EVERY_S = 0.25
"""Minimum time between streamed updates: a replay produces rounds far faster than a browser repaints."""
REROUTE_THREADS = 1
"""torch threads while a re-route replays from the memo. A replay is hundreds of small tensor operations
(stacking memo rows, softmax, argmax); with two OpenMP threads on a shared 2-core CPU each one waits at a
barrier for a descheduled thread: the opening preset's replay took 28-1291 ms with 2 threads and 14-24 ms
with 1, interleaved in one run at load average 3.9 (/tmp profiling, README "Live re-routing")."""

Update = dict[str, Any]


def status_line(trace: Trace, phase: str) -> str:
    """The status bar for a finished (or stopped) run: short, so the text stays above the fold."""
    m = summarize(trace)
    info = trace.models
    timing = "measured wall clock" if m["timing_complete"] else "replayed from memo (wall clock not meaningful)"
    return (f"**{phase}** · {m['tokens']} tokens in {m['rounds']} rounds · {timing} · "
            f"<span title=\"{info.get('num_layers')} layers · {info.get('dtype')} on {info.get('device')} · "
            f"drafter: {info.get('drafter')}\">{info['verifier']}</span>")

def text_update(trace: Trace, phase: str) -> Update:
    """What a visitor reads first: the text, the status and the headline cards (cheap: no figure)."""
    metrics = summarize(trace)
    return {"tokens": render.tokens_html(trace), "status": status_line(trace, phase),
            "legend": render.legend_html(trace), "metrics": cards.metrics_html(metrics, trace),
            "metrics_json": json.loads(json.dumps(metrics, default=str)), "trace": trace,
            "headline": cards.headline_html(metrics, trace), "effect": effect_line(trace)}


def charts_update(trace: Trace, settings: Settings, bundle: object = None, reliability: object = None,
                  rerouted: bool = False) -> Update:
    """The figures, downloads and insight panel; sent after `text_update` so they never delay the text.
    A re-route (`rerouted`) reuses the last full run's reliability data, so its diagram is left as it is."""
    config = settings.config()
    update = {"strip_plot": charts.confidence_figure(trace, config.tau_accept, config.tau_slim),
              "timeline_plot": charts.timeline_figure(trace), "files": export_files(trace)}
    if bundle is not None:
        update.update(insight_updates(bundle, trace, config, reliability))
        update["prediction"] = prediction(trace, reliability, config.tau_accept, config.tau_slim)
        if rerouted:
            del update["reliability_plot"], update["reliability"]
    return update


RUN_THREADS = torch.get_num_threads()
"""torch threads of every other model event, set explicitly: a cancelled re-route's thread may still hold
REROUTE_THREADS for a moment, and Run must not inherit them."""
LIVE = ("tau_accept", "tau_slim", "gamma")
"""What a re-route may change; everything else (the prompt included) is a new run, which only Run starts."""


def reroute_refusal(settings: Settings, previous: Trace | None) -> str | None:
    """Why releasing a threshold should not re-route now (None: it should): the widgets describe a different
    run than the one on screen (say a new prompt was typed). Without this a threshold typed after a new
    prompt started a full generation that Run then waited behind (issue 15). With no run on screen a
    re-route is simply a run with these thresholds."""
    if previous is None:
        return None
    shown = previous.config
    changed = {name for name in Settings.names() if name not in LIVE
               and getattr(Settings.of(shown, previous.prompt), name) != getattr(settings, name)}
    if changed - {"temperature", "top_p"} or (settings.sampling and changed):
        return "Thresholds set for the next run: the prompt or settings changed since the run shown, press **Run**."
    return None


def prediction(trace: Trace | None, reliability: object, tau_accept: float, tau_slim: float) -> str:
    """The line above the charts while a threshold moves: the engine's own re-route where it is known (the
    run on screen when the pair lies in its gap, a prefetched neighbour), else the teacher-forced estimate,
    labelled as rough (it routes each token alone: no rounds, no copy evidence, no audit)."""
    try:
        tau_accept, tau_slim = float(tau_accept), float(tau_slim)
    except (TypeError, ValueError):
        return prediction_markdown(None, tau_accept, tau_slim)
    if trace is not None and trace.tokens:
        if reproduces(trace, tau_accept, tau_slim):
            return shares_line(tier_shares(trace), tau_accept, tau_slim, "exactly the run on screen (these "
                               "thresholds decide every token as it was decided)")
        config = trace.config
        known = PREFETCHER.shares(trace.prompt, config, tau_accept, tau_slim)
        if known is not None:
            return shares_line(known, tau_accept, tau_slim, "the engine's re-route, computed ahead")
        rough = prediction_markdown(reliability, tau_accept, tau_slim, config.draft_signal, config.slim_signal)
        return "Rough estimate, per token without rounds or copy evidence: " + rough
    return prediction_markdown(reliability, tau_accept, tau_slim)


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with `count` torch threads; model events run one at a time, so the process-wide
    setting only ever affects the event that set it."""
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(RUN_THREADS)


def run(settings: Settings, session: str, *, replay: bool, phase: str = "",
        previous: Trace | None = None, reliability: object = None) -> Iterator[Update]:
    """Generate, streaming the coloured text each round; fidelity and charts at the end.

    With `previous` (a re-route), the part of the old text not yet re-decided stays on screen,
    faded, so the text never collapses while the new routing streams in, and the reliability data
    of the last full run (`reliability`) is reused instead of measured again.
    """
    config = settings.config()
    started = time.perf_counter()
    if not SESSIONS.is_loaded():
        yield {"status": "… Loading the model (first use only, a few seconds)…"}
    if reliability is not None:  # the new thresholds' predicted tier shares, before any model runs
        yield {"prediction": prediction(previous, reliability, config.tau_accept, config.tau_slim)}
    bundle = SESSIONS.bundle(session)
    if previous is not None and (config.tau_accept, config.tau_slim) not in PREFETCHER.done:
        # a far move: its passes are not in the memo yet, so say so beside the sliders at once
        yield {"headline": cards.headline_html(summarize(previous), previous, progress="Re-routing: the model runs "
                                               "the passes these thresholds need for the first time…")}
    label = "Running" if replay else "Running every pass for real (honest timing)"
    # a re-route replays in tens of ms: stream its progress only when it takes longer than one repaint interval
    trace, last = None, (time.perf_counter() if previous is not None else 0.0)
    threads = REROUTE_THREADS if previous is not None and replay else RUN_THREADS
    with SESSIONS.job(session) as should_stop, PREFETCHER.foreground(), torch_threads(threads):
        for trace in iter_generate(bundle, settings.prompt, config, replay=replay, should_stop=should_stop,
                                   time_budget_s=RUN_TIME_BUDGET_S):
            if time.perf_counter() - last < STREAM_EVERY_S:
                continue
            last = time.perf_counter()
            progress = f"{label}: {len(trace.tokens)}/{config.max_new_tokens} tokens, round {len(trace.rounds)}"
            cut = len(trace.rolled_back)  # the text may shrink between updates: an audit cut it back
            progress += (f", the audit cut {cut} token{'s' * (cut != 1)} so far…" if cut else "…")
            yield {"tokens": render.tokens_html(trace, pending=previous), "status": f"… {progress}",
                   "headline": cards.headline_html(summarize(trace), progress=progress)}
        if trace is None:
            return
        stopped = trace.partial
        if not stopped:
            if previous is None:  # a re-route's answer is usually measured already (app.fidelity_cache)
                yield {"status": "… Measuring fidelity against the full model…",
                       "headline": cards.headline_html(summarize(trace), progress="Measuring fidelity…")}
            FIDELITY.attach(bundle, trace)
            if previous is None:
                yield {"status": "… Measuring how reliable each confidence is on this text…"}
                reliability = measure_reliability(bundle, trace, config)
    if stopped:
        phase = f"Stopped early: partial result ({trace.stop_reason})"
    elif not phase:
        phase = "Done" if replay else "Done (real timing)"
    text = text_update(trace, phase.format(seconds=time.perf_counter() - started))
    yield text
    # the last update repeats the text: an API caller's result is the last update alone, and Gradio sends
    # each output as a diff against the previous update, so the browser receives only the figures
    yield {**text, **charts_update(trace, settings, bundle, reliability, rerouted=previous is not None)}
    if not stopped:
        PREFETCHER.remember(settings.prompt, config, trace)
        PREFETCHER.schedule(bundle, settings.prompt, config)


def drain(updates: Iterator[Update], on_update: Callable[[Update], None] | None = None) -> Update:
    """Consume a stream, merging its updates into one dict (benchmarks and tests)."""
    merged: Update = {}
    for update in updates:
        merged.update(update)
        if on_update is not None:
            on_update(update)
    return merged
