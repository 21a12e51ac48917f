"""Which browser page still waits for what its run left for after the τ_accept line: its reliability data (`LATE`) and
the rest of its grid points' fidelity (`LATE_FIDELITY`: their token agreement and, in reduced precision, words
differing against the full model's plain answer).

A VIA-SD run on a browser page leaves its three teacher-forced passes (the confidence and reliability charts, the
predicted tier shares) to the background, after the τ_accept line in view (app.prefetch): on two cores they took
about 2 s between Done and the line's first point. The run's page polls anyway for the grid's points; the same
tick asks here whether the data exists now (app.streaming.reliability_update) and receives the charts once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.grids import GRIDS, GridStore, RunGrid
from core.limits import MAX_SESSIONS


class LateReliability:
    """Session -> the grid whose late data its page waits for (at most MAX_SESSIONS, oldest out). `ready(grid)` says
    whether the data exists (True), is still coming (False) or will not come (None: measuring it failed)."""

    def __init__(self, grids: GridStore = GRIDS, ready: Callable[[RunGrid], bool | None] | None = None) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, str] = {}
        self._grids = grids
        self._ready = ready or _reliability_ready

    def wait_for(self, session: str, grid: RunGrid | None) -> None:
        """This session's page was sent `grid`'s run without its reliability data (None: it waits for none)."""
        with self._lock:
            self._waiting.pop(session, None)
            if grid is not None:
                self._waiting[session] = grid.id
                while len(self._waiting) > MAX_SESSIONS:
                    self._waiting.pop(next(iter(self._waiting)))

    def waiting(self, session: str) -> bool:
        with self._lock:
            return session in self._waiting

    def arrived(self, session: str) -> RunGrid | None:
        """The grid this session's page waited for, once, when its data exists; None before that (and for good when
        the grid is gone or its measurement failed: the page stops waiting)."""
        with self._lock:
            wanted = self._waiting.get(session)
        grid = self._grids.by_id(wanted) if wanted is not None else None
        ready = self._ready(grid) if grid is not None else None
        failed = ready is None
        if ready is False:
            return None
        with self._lock:
            self._waiting.pop(session, None)
        return None if failed else grid

    def forget(self, session: str) -> None:
        self.wait_for(session, None)


def _reliability_ready(grid: RunGrid) -> bool | None:
    return True if grid.reliability is not None else (False if grid.reliability_later else None)


LATE = LateReliability()
LATE_FIDELITY = LateReliability(ready=lambda grid: not grid.fidelity_later)


def waiting(session: str) -> bool:
    """Whether this session's page still waits for anything its run left for after the line."""
    return LATE.waiting(session) or LATE_FIDELITY.waiting(session)
