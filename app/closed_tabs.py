"""Forget a browser tab's state a minute after the tab closes, not when 200 other tabs have come since.

Gradio keeps each session's state (a copy of every component's config and last output, about 1 MB here) until
`state_session_capacity` sessions are held, closed or not; the app keeps its visitor record and page feed
alike. The fourth one-hour soak held 35 sessions at minute 10 and 200 at minute 60, nearly all of them tabs
long closed: memory that a public demo holds for visitors who have left. A closed tab is forgotten at the first
tab close that comes `GRACE_S` or more after its own (no timer thread), unless it came back (Gradio saw an event
of it since), so a page that loses its connection for a moment and reconnects keeps its run on screen.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from typing import Any

import gradio as gr

GRACE_S = 60.0
"""How long a closed tab's state is kept in case it reconnects."""
CAME_BACK_S = 1.0
"""An event of the session this long after its close means the tab is back (the close event itself touches the
session a moment before it is noted)."""


def forget_app_state(session: str) -> None:
    """The app's own records of a session: its visitor record (model choice, stop flag), its page feed and the
    reliability data its page waits for."""
    from app.late_reliability import LATE, LATE_FIDELITY
    from app.session import SESSIONS
    from app.views.page_grid import FEED

    SESSIONS.forget(session)
    FEED.forget(session)
    LATE.forget(session)
    LATE_FIDELITY.forget(session)


class ClosedTabs:
    """Tabs closed and not yet forgotten; `closed` notes one and forgets those whose grace has passed."""

    def __init__(self, state_holder: Callable[[], Any], forget_app_state: Callable[[str], None] = forget_app_state,
                 grace_s: float | None = None, now: Callable[[], datetime.datetime] = datetime.datetime.now) -> None:
        self._state_holder = state_holder  # Gradio's StateHolder (session_data, time_last_used, lock) once launched
        self._forget_app_state = forget_app_state
        self._grace = datetime.timedelta(seconds=GRACE_S if grace_s is None else grace_s)
        self._now = now
        self._lock = threading.Lock()
        self._closed: dict[str, datetime.datetime] = {}

    def closed(self, session: str) -> list[str]:
        """Note that this session's tab closed; returns the sessions forgotten now (their grace is over)."""
        now = self._now()
        with self._lock:
            self._closed[session] = now
            due = [(s, at) for s, at in self._closed.items() if now - at >= self._grace]
            for s, _ in due:
                del self._closed[s]
        forgotten = [s for s, at in due if not self._came_back(s, at)]
        for s in forgotten:
            self._forget(s)
        return forgotten

    def on_unload(self, request: gr.Request) -> None:
        """Gradio's unload event: the tab of `request` closed (its heartbeat connection ended)."""
        if request is not None and request.session_hash:
            self.closed(request.session_hash)

    def __len__(self) -> int:
        with self._lock:
            return len(self._closed)

    def _came_back(self, session: str, closed_at: datetime.datetime) -> bool:
        """Whether Gradio saw an event of this session after its tab closed (a reconnect)."""
        last = self._state_holder().time_last_used.get(session)
        return last is not None and last - closed_at > datetime.timedelta(seconds=CAME_BACK_S)

    def _forget(self, session: str) -> None:
        holder = self._state_holder()
        with holder.lock:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
        self._forget_app_state(session)
