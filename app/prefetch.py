"""Compute a live run's whole threshold grid in the background, nearest point first, while nobody waits.

A point the memo has not seen needs the model for every prefix it has not visited (seconds on a 2-core CPU);
one already computed is drawn in the browser in a frame. So after each live run the app works through the
run's grid (app.grids.RunGrid: τ_accept notches, the τ_slim values that matter, γ at three values) in the
background: first every notch of the τ_accept line the visitor looks at (the run's τ_slim and γ, or the last
re-route's), then the run's reliability data where its page left it for later (app.late_reliability), then what the
line's points' fidelity still lacks (their token agreement: a teacher-forced pass each), then the rest nearest
first. The points of a line (and then of each next batch) are computed side by side, their model passes shared
(core.sweeps.together: a low notch's own branch is mostly one-token drafter passes, bound by reading the weights);
each finished point lands in the grid, and the page picks it up (app.views.page_grid).
The points are computed on the model thread (app.model_thread.in_background: one OpenMP team for all model work),
while no model event holds or waits for the turn; a small driver thread, which runs no model, hands them there. Any
model event stops the job before its next shared pass, so foreground runs, and "Run it live" in particular, never
share the CPU with it (the plain reference is the exception: about a pass per token, not interruptible); after a
run, its grid goes first and the grids of earlier runs (other visitors') left unfinished follow.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator

from app.fidelity_cache import FIDELITY
from app.grids import RunGrid
from app.model_thread import in_background, model_wanted, on_model_thread_now, turn_borrowed
from app.views.insight import measure_reliability
from core import ModelBundle
from core.round_policy import thresholds_apply
from core.sweeps.grid import STEP, Point
from core.sweeps.together import generate_together
from core.trace import Trace

log = logging.getLogger(__name__)

__all__ = ["PREFETCHER", "STEP", "Prefetcher", "tier_shares"]

WANTED_POLL_S = 0.05
"""How often the driver looks whether the model event that stopped the points has ended."""
TOGETHER = 16
"""Points computed side by side at most, their passes shared (core.sweeps.together): a whole τ_accept line."""
MAX_PENDING = 4
"""Unfinished grids kept queued: a newer run's grid goes first, then the earlier runs' (other visitors') resume."""


def tier_shares(trace: Trace) -> dict[int, float]:
    """Share of the output's tokens each tier decided (what the cockpit's prediction line shows)."""
    counts = Counter(int(t.tier) for t in trace.tokens)
    return {tier: counts[tier] / max(len(trace.tokens), 1) for tier in (1, 2, 3)}


class Prefetcher:
    """One background job at a time; foreground model events pre-empt it; a newer run's grid goes first and the
    unfinished grids of earlier runs follow it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: list[tuple[weakref.ref, RunGrid]] = []  # grids still to finish, newest first (a bundle
        # the sessions have unloaded is not kept alive for a background grid: its entry drops out)
        self.grid: RunGrid | None = None  # the grid of the newest run scheduled
        self.scheduled = 0  # jobs started so far: a benchmark waits for the one a run schedules after its last update

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Enter before every model event: stops the background job and waits until it has exited (on the model
        thread itself nothing of the job can run meanwhile: a point queued there sees the stop and returns)."""
        with self._lock:
            self._cancel.set()
            thread = self._thread
        if thread is not None and not on_model_thread_now():
            thread.join(timeout=30)  # it stops at its next round boundary
        yield

    def schedule(self, bundle: ModelBundle, grid: RunGrid) -> bool:
        """Start computing the points `grid` still misses (VIA-SD only: other modes ignore the thresholds), then
        those of the earlier runs' grids still unfinished (`MAX_PENDING`, newest first); False when `grid` has
        nothing to compute or the job cannot start now (it is queued, and the next run's job goes on to it)."""
        if not thresholds_apply(grid.config.mode) or not (grid.missing() or grid.later_due()):
            return False
        with self._lock:
            self._pending = [(weakref.ref(bundle), grid),
                             *[(b, g) for b, g in self._pending if g is not grid]][:MAX_PENDING]
            self._number()
        if turn_borrowed():  # a re-route between two rounds of another run: that run still needs the CPU
            return False
        with self._lock:
            self._cancel.set()  # a job still running gives way to the newer one, which goes on to it after
            self._cancel = threading.Event()
            cancel = self._cancel
            self.grid = grid
            self.scheduled += 1
            self._thread = threading.Thread(target=self._run, args=(cancel,), name="viasd-prefetch", daemon=True)
            self._thread.start()
        return True

    def _next(self) -> tuple[ModelBundle, RunGrid] | None:
        """The newest queued grid that still misses points (finished ones leave the queue)."""
        with self._lock:
            self._pending = [(b, g) for b, g in self._pending
                             if b() is not None and (g.missing() or g.later_due())]
            self._number()
            bundle, grid = self._pending[0] if self._pending else (lambda: None, None)
        found = bundle()
        return (found, grid) if found is not None else None

    def _number(self) -> None:
        """Tell each queued grid how many are ahead of it (its page says so); under `_lock`."""
        for ahead, (_, grid) in enumerate(self._pending):
            grid.ahead = ahead

    def pending(self) -> list[RunGrid]:
        """The grids queued for the background, in the order they will be worked on."""
        with self._lock:
            return [g for _, g in self._pending]

    def _run(self, cancel: threading.Event) -> None:
        """The driver: whenever no model event holds the turn, the model thread computes points until one wants it."""
        try:
            while not cancel.is_set():
                if model_wanted():  # the event in progress ends first (polled: the driver never holds the turn)
                    time.sleep(WANTED_POLL_S)
                    continue
                if not in_background(self._points, cancel).result():
                    return
        except Exception:  # a background helper must never take the app down
            log.exception("prefetch failed")

    def _points(self, cancel: threading.Event) -> bool:
        """On the model thread: points until the queue is done (False), stopped (False) or a model event wants the
        model (True: the driver goes on after it)."""
        stop = lambda: cancel.is_set() or model_wanted()  # noqa: E731
        while not stop():
            job = self._next()
            if job is None:
                return False
            bundle, grid = job
            if grid.reliability_due():  # after the line in view: the charts' data, then the rest of the grid
                grid.reliability = measure_reliability(bundle, grid.trace(Point.of(grid.config)), grid.config)
                grid.reliability_later = False  # measured (or failed, and said so in the log): not again
                continue
            if grid.fidelity_due():
                self._rest_of_fidelity(bundle, grid, stop)
                continue
            points = grid.next_points(TOGETHER)  # asked afresh each time: a re-route may have moved the line in view
            generate_together(bundle, grid.prompt, [p.apply(grid.config) for p in points], should_stop=stop,
                              on_trace=functools.partial(self._landed, bundle, grid, points))
        return not cancel.is_set()

    @staticmethod
    def _landed(bundle: ModelBundle, grid: RunGrid, points: list[Point], i: int, trace: Trace) -> None:
        """A point computed: its words differing measured (cached per answer), then it lands in the grid. Before its
        line is on a page's screen, words differing only (what the page draws; the rest after the line), and in
        reduced precision against the run's classic-SD twin, as the run's own was."""
        later = grid.fidelity_later
        if not (later and FIDELITY.tiers_first(bundle, trace, agreement=False)):
            FIDELITY.attach(bundle, trace, agreement=not later)
        grid.add(points[i], trace)

    @staticmethod
    def _rest_of_fidelity(bundle: ModelBundle, grid: RunGrid, stop: Callable[[], bool]) -> None:
        """After the line: what the computed points' fidelity still lacks, the run's first. Each one's token
        agreement (a teacher-forced pass of the full model over a text it mostly never saw: 1–2 s a point on two
        cores, 40 % of a line's work) and, in reduced precision, words differing against the full model's plain
        answer, numerics apart from tiers (the first point decodes it: about a pass per token, not interruptible).
        A model event stops it between two points (it goes on after); then the pages that hold the grid are sent it
        again (app.late_reliability)."""
        for _, trace in grid.computed():
            if stop():
                return
            try:
                FIDELITY.attach(bundle, trace)  # cached per answer: points with one text share one pass
            except Exception:
                grid.fidelity_later = False  # not again (the failure is logged by the driver)
                raise
        grid.fidelity_later = False
        grid.page = None  # re-encoded with the new numbers

    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def clear(self) -> None:
        """Drop every queued grid and stop the job: nothing left runs on in the background (tests between modules)."""
        with self._lock:
            self._pending = []
        self.stop()

    def stop(self) -> None:
        """Cancel the job and wait for it: a thread inside torch at interpreter exit aborts the process."""
        self._cancel.set()
        self.wait(timeout=30)

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the current job ends (tests and benchmarks use this)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


PREFETCHER = Prefetcher()
atexit.register(PREFETCHER.stop)
