"""Which browser page still waits for its run's reliability data (and, in reduced precision, its plain reference),
measured in the background after the line.

A VIA-SD run on a browser page leaves its three teacher-forced passes (the confidence and reliability charts, the
predicted tier shares) to the background, after the τ_accept line in view (app.prefetch): on two cores they took
about 2 s between Done and the line's first point. The run's page polls anyway for the grid's points; the same
tick asks here whether the data exists now (app.streaming.reliability_update) and receives the charts once.
"""

from __future__ import annotations

import threading

from app.grids import GRIDS, GridStore, RunGrid
from core.limits import MAX_SESSIONS


class LateReliability:
    """Session -> the grid whose reliability data its page waits for (at most MAX_SESSIONS, oldest out)."""

    def __init__(self, grids: GridStore = GRIDS) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, str] = {}
        self._grids = grids

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
        """The grid this session's page waited for, once, when its reliability data exists; None before that (and
        for good when the grid is gone or its measurement failed: the page stops waiting)."""
        with self._lock:
            wanted = self._waiting.get(session)
        grid = self._grids.by_id(wanted) if wanted is not None else None
        failed = grid is None or (grid.reliability is None and not grid.reliability_later)
        if grid is not None and not failed and (grid.reliability is None or grid.reference_later):
            return None
        with self._lock:
            self._waiting.pop(session, None)
        return None if failed else grid

    def forget(self, session: str) -> None:
        self.wait_for(session, None)


LATE = LateReliability()
