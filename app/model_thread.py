"""Every model event runs on one long-lived thread, so the app's thread count does not follow the crowd.

torch's OpenMP gives each thread that runs a parallel operation a team of its own (one more thread on 2 cores),
and Gradio runs each step of a handler on whichever of its worker threads is free. Model events take turns
anyway (`concurrency_id="model"`, one at a time), yet their teams came and went with Gradio's workers: the
one-hour soak saw 6-10 native threads and its peak after the warm-up above the warm-up's (17 -> 19). Run on one
thread, the model work keeps one team for the life of the process; Gradio's workers only wait for it.

A model event holds the model's turn (`TURN`) for its whole life, as its steps and contexts (torch threads, a
session's job) span its yields. Gradio's queue lets model events in one at a time, so they rarely wait for it;
a re-route is served outside that queue (its answer is usually computed already) and takes the turn only when it
must run the model (`model_steps`): then it waits for the event in progress, not for the whole queue.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

NAME = "viasd-model"
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix=NAME)
_DONE = object()
T = TypeVar("T")
TURN = threading.Lock()
"""The model's turn: held by one event at a time, from its first step to its end (see the module's docstring)."""
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
    if _on_model_thread_now():
        return call(*args, **kwargs)
    context = contextvars.copy_context()
    return _EXECUTOR.submit(context.run, call, *args, **kwargs).result()


def _on_model_thread_now() -> bool:
    return threading.current_thread().name.startswith(NAME)


@contextlib.contextmanager
def model_turn() -> Iterator[None]:
    """Hold the model's turn for the block (at once on the model thread: its caller holds it already)."""
    if _on_model_thread_now():
        yield
        return
    with TURN:
        yield


def model_steps(stream: Callable[[], Iterator[dict]], waiting: dict) -> Iterator[dict]:
    """The updates of `stream()`, made on the model thread while holding the turn; while the turn is taken,
    `waiting` once, then an empty update every `WAIT_POLL_S` (so a cancelled caller stops waiting). For an event
    outside the model queue (a re-route that must run the model)."""
    if not TURN.acquire(blocking=False):
        yield waiting
        while not TURN.acquire(timeout=WAIT_POLL_S):
            yield {}  # nothing changes on screen
    try:
        yield from _steps(stream)
    finally:
        TURN.release()


def _steps(stream: Callable[[], Iterator[T]]) -> Iterator[T]:
    inner = stream()  # creating a generator runs none of its body
    try:
        while (update := on_model_thread(next, inner, _DONE)) is not _DONE:
            yield update
    finally:
        # A cancelled event closes this generator at a yield, when no step of `inner` is in flight: its own
        # `finally` runs here and now, still holding the turn, never beside another event's step.
        inner.close()


def model_event(handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler` with its body (each step, for a generator) on the model thread, holding the model's turn; a
    decorator for every handler wired with `**MODEL`. The signature stays the handler's (Gradio reads it for
    `gr.Request`, `gr.Progress` and the inputs), and so does a method's binding."""
    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def event(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with model_turn():
                yield from _steps(functools.partial(handler, *args, **kwargs))
    else:
        @functools.wraps(handler)
        def event(*args: Any, **kwargs: Any) -> Any:
            with model_turn():
                return on_model_thread(handler, *args, **kwargs)
    event.on_model_thread = True  # type: ignore[attr-defined]  # app.ui's test checks every model event has it
    return event
