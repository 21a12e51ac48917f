"""Every model event runs on one long-lived thread, so the app's thread count does not follow the crowd.

torch's OpenMP gives each thread that runs a parallel operation a team of its own (one more thread on 2 cores),
and Gradio runs each step of a handler on whichever of its worker threads is free. Model events take turns
anyway (`concurrency_id="model"`, one at a time), yet their teams came and went with Gradio's workers: the
one-hour soak saw 6-10 native threads and its peak after the warm-up above the warm-up's (17 -> 19). Run on one
thread, the model work keeps one team for the life of the process; Gradio's workers only wait for it.
"""

from __future__ import annotations

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

MODEL = {"concurrency_id": "model", "concurrency_limit": 1}
"""The queue every model event joins: one at a time, as a 2-core machine runs one model job well; its handler
is decorated with `model_event`."""


def on_model_thread(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`call(*args, **kwargs)` on the model thread, in the caller's context (Gradio's progress bar and warnings
    read context variables); directly when already there (a model event calling another would wait on itself)."""
    if threading.current_thread().name.startswith(NAME):
        return call(*args, **kwargs)
    context = contextvars.copy_context()
    return _EXECUTOR.submit(context.run, call, *args, **kwargs).result()


def model_event(handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler` with its body (each step, for a generator) on the model thread; a decorator for every handler
    wired with `**MODEL`. The signature stays the handler's (Gradio reads it for `gr.Request`, `gr.Progress`
    and the inputs), and so does a method's binding."""
    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def event(*args: Any, **kwargs: Any) -> Iterator[Any]:
            inner = handler(*args, **kwargs)  # creating a generator runs none of its body
            try:
                while (update := on_model_thread(next, inner, _DONE)) is not _DONE:
                    yield update
            finally:
                # A cancelled event closes this generator at a yield, when no step of `inner` is in flight: its
                # own `finally` runs here and now, as it did before, never behind another event's step.
                inner.close()
    else:
        @functools.wraps(handler)
        def event(*args: Any, **kwargs: Any) -> Any:
            return on_model_thread(handler, *args, **kwargs)
    event.on_model_thread = True  # type: ignore[attr-defined]  # app.ui's test checks every model event has it
    return event
