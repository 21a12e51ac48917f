"""One decorator for every handler: a typed error becomes a warning toast plus one status line.

Handlers return (or yield) dicts keyed by output *name*; on `core.ViaSdError` (bad input the visitor
can fix) or an unexpected exception (logged), the decorated handler instead produces only
`{status_key: message}`, so every other output keeps the last good result on screen.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from core import ViaSdError

log = logging.getLogger("viasd.app")


def message(text: str) -> str:
    """A status line that stands out as a problem (icon + bold: not colour alone)."""
    return f"⚠ **{text}**"


def _explain(exc: Exception, where: str) -> str:
    if isinstance(exc, ViaSdError):
        gr.Warning(str(exc))
        return message(str(exc))
    log.exception("%s failed", where)
    gr.Warning(f"internal error: {exc}")
    return message(f"internal error: {type(exc).__name__}: {exc}")


def reports_errors(status_key: str, suffix: str = "") -> Callable[[Callable], Callable]:
    """Decorate a handler (function or generator) so errors land in `status_key` as one line.

    `suffix` is appended to the message (e.g. "still showing the last good result").
    """

    def decorate(fn: Callable) -> Callable:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def stream(*args: Any, **kwargs: Any):
                try:
                    yield from fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001  (typed ones become warnings, the rest are logged)
                    yield {status_key: _explain(exc, fn.__name__) + suffix}
            return stream

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                return {status_key: _explain(exc, fn.__name__) + suffix}
        return call

    return decorate
