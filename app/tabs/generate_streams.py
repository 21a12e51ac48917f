"""The Generate tab's streams: a run, and a threshold release (a re-route) with what it waits for.

A re-route is served outside the model queue: a computed point of the run's grid answers at once
(`_reroute_at_once`); a point not computed yet takes the model's turn (`app.model_thread.model_steps`) and streams
like a run. A release during one's own run waits for that run to end (`_after_own_run`). The tab
(app.tabs.generate) maps the name-keyed updates onto its components.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import gradio as gr

from app import streaming
from app.gpu import on_gpu, settings_seconds
from app.guard import reports_errors
from app.model_thread import WAIT_POLL_S
from app.session import SESSIONS
from app.settings import Settings

__all__ = ["WAITING_FOR_MODEL", "_after_own_run", "_noted", "_reroute", "_reroute_at_once", "_run"]


def _noted(updates, notes: list[str]):
    """The stream with the clamping notes (Settings.clamped) leading every status line."""
    lead = " · ".join(f"⚠ {note}" for note in notes)
    for update in updates:
        if lead and "status" in update:
            update = {**update, "status": f"{lead} · {update['status']}"}
        yield update


@reports_errors("status")
@on_gpu(settings_seconds)
def _run(settings: Settings, session: str, replay: bool, models: tuple[str, str] | None = None):
    settings, notes = settings.clamped()
    yield from _noted(streaming.run(settings, session, replay=replay, models=models), notes)


def _after_own_run(session: str) -> Iterator[dict]:
    """Wait while this session's own run is still going (its text says Done while its fidelity is measured): the
    re-route starts from that run, as it did behind it in the model queue, never between its rounds. Yields a
    no-change update every `WAIT_POLL_S` (a cancelled re-route stops waiting at a yield); the run's own status
    line stays."""
    next_yield = time.monotonic()
    while SESSIONS.running(session):
        if time.monotonic() >= next_yield:
            yield {"status": gr.skip()}
            next_yield = time.monotonic() + WAIT_POLL_S
        time.sleep(0.05)


WAITING_FOR_MODEL = {"status": "… Waiting for the model: another run is using it; this re-route goes next."}


def _reroute_phase(settings: Settings) -> str:
    return f"Re-routed in {{seconds:.2f}} s to τ {settings.tau_accept:g} / {settings.tau_slim:g}"


@reports_errors("status", suffix=" — still showing the last good result")
def _reroute_at_once(settings: Settings, session: str, previous: Any, reliability: Any) -> dict | None:
    """The re-route's answer when no model must run: a bad value, a refusal, a computed point of the run's grid
    (or why a recorded grid's point outside it needs the models); None when the model must run. Served outside the
    model queue, so a notch already computed answers at once even while other visitors' runs queue."""
    settings, notes = settings.clamped()
    settings.config()  # a bad value stops here, before anything on screen changes
    refusal = streaming.reroute_refusal(settings, previous)
    if refusal is not None:
        return {"status": refusal}
    _, done = streaming.grid_point(settings, previous, session, _reroute_phase(settings), time.perf_counter(),
                                   reliability)
    return None if done is None else next(_noted([done], notes))


@reports_errors("status", suffix=" — still showing the last good result")
@on_gpu(settings_seconds)
def _reroute(settings: Settings, session: str, previous: Any, reliability: Any):
    settings, notes = settings.clamped()
    yield from _noted(streaming.run(settings, session, replay=True, phase=_reroute_phase(settings),
                                    previous=previous, reliability=reliability), notes)
