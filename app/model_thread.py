"""Every model event runs on one long-lived thread, so the app's thread count does not follow the crowd.

torch's OpenMP gives each thread that runs a parallel operation a team of its own (one more thread on 2 cores),
and Gradio runs each step of a handler on whichever of its worker threads is free. Model events take turns
anyway (`concurrency_id="model"`, one at a time), yet their teams came and went with Gradio's workers: the
one-hour soak saw 6-10 native threads and its peak after the warm-up above the warm-up's (17 -> 19). Run on one
thread, the model work keeps one team for the life of the process; Gradio's workers only wait for it.

Each step of a model event holds the model's turn (`TURN`), and keeps it to its next step: its contexts (torch
threads, a session's job, a model loading in the background) span its yields. Gradio's queue lets model events
in one at a time, so they rarely wait for it. A re-route is served outside that queue (its answer is usually
computed already) and takes the turn only when it must run the model (`model_steps`), for its whole life; a run
lends the turn between two rounds (`lend_turn`), so such a re-route waits a round of another visitor's run, not
the run and the queue behind it (the one-hour soak's p95 of a re-route was that queue's worst wait).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

NAME = "viasd-model"
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix=NAME)
_DONE = object()
T = TypeVar("T")
TURN = threading.Lock()
"""The model's turn: held by one job at a time (see the module's docstring)."""
WAIT_POLL_S = 1.0
"""How often an event waiting for the turn yields: a cancelled event (Run replaces a re-route) ends only at a yield."""

MODEL = {"concurrency_id": "model", "concurrency_limit": 1}
"""The queue every model event joins: one at a time, as a 2-core machine runs one model job well; its handler
is decorated with `model_event`."""
REROUTE = {"concurrency_id": "reroute", "concurrency_limit": 8}
"""The re-route's own queue: most answers are computed already and need no turn (a few at once, bounded so a flood
of slider releases cannot take every worker thread)."""


def on_model_thread(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`call(*args, **kwargs)` on the model thread, in the caller's context (Gradio's progress bar and warnings
    read context variables); directly when already there (a model event calling another would wait on itself)."""
    if on_model_thread_now():
        return call(*args, **kwargs)
    context = contextvars.copy_context()
    return _EXECUTOR.submit(context.run, call, *args, **kwargs).result()


def in_background(call: Callable[..., T], *args: Any) -> Future:
    """`call(*args)` on the model thread, queued behind whatever runs there: the prefetcher's points run where the
    model events' OpenMP team lives. A second thread running torch gets a team of its own, and on 2 cores the two
    teams' workers outnumber the CPUs, so OpenMP stops spinning and every parallel region waits on a wake-up: a
    τ_accept line took 12.7 s there against 9.8 s on one thread (docs/benchmarks.md)."""
    return _EXECUTOR.submit(call, *args)


def model_wanted() -> bool:
    """Whether a model event holds the turn or is still open: background work yields to it at its next round."""
    return TURN.locked() or _STATE.events_open > 0


def on_model_thread_now() -> bool:
    return threading.current_thread().name.startswith(NAME)


class _Lending:
    """What the model thread's current step said about the turn (only the model thread writes it)."""

    lend = False  # the step ends where a re-route may run before the event's next step (`lend_turn`)
    borrowed = False  # a re-route runs now between two steps of another event (`turn_borrowed`)
    events_open = 0  # model events started and not yet ended (counted on the workers, under the turn)


_STATE = _Lending()


def lend_turn() -> None:
    """Called by a model event's step right before it yields, where nothing of its own runs in the background and
    its contexts allow another job in: a re-route waiting for the model may run whole before the next step.
    Runs call it at each streamed round, so a slider waits a round for another visitor's run, not the run."""
    if on_model_thread_now():
        _STATE.lend = True


def turn_borrowed() -> bool:
    """True while a re-route runs inside another event's lent turn: that event is not finished, so nothing may
    start in the background (the prefetcher) until it is."""
    return _STATE.borrowed


def _step(inner: Iterator[T]) -> tuple[Any, bool]:
    _STATE.lend = False
    update = next(inner, _DONE)
    return update, _STATE.lend


def model_steps(stream: Callable[[], Iterator[dict]], waiting: dict) -> Iterator[dict]:
    """The updates of `stream()`, made on the model thread while holding the turn for its whole life; while the
    turn is taken, `waiting` every `WAIT_POLL_S` (the same value: nothing changes on screen, but a cancelled caller
    stops waiting at a yield). For an event outside the model queue (a re-route that must run the model): it gets
    the turn when the event in progress ends or lends it (`lend_turn`)."""
    if not TURN.acquire(blocking=False):
        yield waiting
        while not TURN.acquire(timeout=WAIT_POLL_S):
            yield waiting
    _STATE.borrowed = _STATE.events_open > 0
    inner = stream()  # creating a generator runs none of its body
    try:
        while (update := on_model_thread(next, inner, _DONE)) is not _DONE:
            yield update
    finally:
        try:  # a cancelled caller closes this generator at a yield: the stream's own `finally` runs now, in turn
            on_model_thread(inner.close)
        finally:
            _STATE.borrowed = False
            TURN.release()


def _event_stream(inner: Iterator[Any]) -> Iterator[Any]:
    """A model event's stream: each step on the model thread holding the turn, given back between two steps
    only where the step lent it (`lend_turn`)."""
    if on_model_thread_now():  # called by another model event, which holds the turn
        while (update := next(inner, _DONE)) is not _DONE:
            yield update
        return
    TURN.acquire()
    held = True
    _STATE.events_open += 1
    try:
        while True:
            if not held:
                TURN.acquire()
                held = True
            update, lend = on_model_thread(_step, inner)
            if update is _DONE:
                return
            if lend:
                TURN.release()
                held = False
            yield update
    finally:
        if not held:
            TURN.acquire()
        try:  # cancelled at a yield: the handler's own `finally` runs now, in turn, where its steps ran
            on_model_thread(inner.close)
        finally:
            _STATE.events_open -= 1
            TURN.release()


def model_event(handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler` with its body (each step, for a generator) on the model thread, holding the model's turn; a
    decorator for every handler wired with `**MODEL`. The signature stays the handler's (Gradio reads it for
    `gr.Request`, `gr.Progress` and the inputs), and so does a method's binding."""
    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def event(*args: Any, **kwargs: Any) -> Iterator[Any]:
            yield from _event_stream(handler(*args, **kwargs))  # creating a generator runs none of its body
    else:
        @functools.wraps(handler)
        def event(*args: Any, **kwargs: Any) -> Any:
            if on_model_thread_now():
                return handler(*args, **kwargs)
            with TURN:
                return on_model_thread(handler, *args, **kwargs)
    event.on_model_thread = True  # type: ignore[attr-defined]  # app.ui's test checks every model event has it
    return event
