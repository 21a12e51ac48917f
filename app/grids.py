"""The computed points of each run on screen: recorded sweeps and what the background prefetch computed.

A run here is a prompt, every setting but the three live sliders (τ_accept, τ_slim, γ) and the models that
ran it. Its `RunGrid` holds one trace per grid point computed so far, in the order they were computed: a
shipped sweep (app.recorded) arrives complete; a live run's grid fills in as the prefetcher works through
it, the τ_accept line the visitor looks at first. A re-route to a computed point needs no model: the trace is
there. The page receives the same points (app.views.page_grid), so a slider notch inside the grid never waits
for the server.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from core.analysis.reliability import ReliabilityData
from core.config import DecodeConfig
from core.sweeps.grid import Grid, Point, default_grid
from core.trace import Trace

MAX_RUNS = 16
"""Live runs whose grids are kept (least recently used out first); recorded sweeps always stay."""


def run_key(prompt: str, config: DecodeConfig, models: tuple[str, ...]) -> tuple:
    """A run up to its live sliders: the prompt, every other setting and the models (names and dtype)."""
    return prompt, config.with_(tau_accept=0.0, tau_slim=0.0, gamma=0), tuple(models)


def run_id(key: tuple) -> str:
    """A short stable name for a run (the page tells runs apart by it)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def models_of(trace: Trace) -> tuple[str, str, str]:
    """(verifier, drafter, dtype) of the models a trace ran on, as the trace recorded them."""
    info = trace.models
    return str(info.get("verifier")), str(info.get("drafter")), str(info.get("dtype"))


@dataclass
class RunGrid:
    """One run's grid and the traces of the points computed so far."""

    prompt: str
    config: DecodeConfig  # the run's own settings (its point is the first computed)
    grid: Grid
    models: tuple[str, str, str]
    traces: dict[str, Trace] = field(default_factory=dict)  # point key -> trace, in the order computed
    reliability: ReliabilityData | None = None  # teacher-forced signals of the run's own text
    reliability_later: bool = field(default=False, compare=False)  # measured by the background after the line
    fidelity_later: bool = field(default=False, compare=False)  # points measured in part until after the line
    recorded: dict[str, Any] | None = None  # a shipped sweep's meta (models, machine, date, command)
    page: Any = field(default=None, repr=False, compare=False)  # its page encoding (app/views/page_grid.page_of)
    focus: Point | None = field(default=None, compare=False)  # where the sliders look (None: the run's own point)
    ahead: int = field(default=0, compare=False)  # newer runs' grids the background computes before this one
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def key(self) -> tuple:
        return run_key(self.prompt, self.config, self.models)

    @property
    def id(self) -> str:
        return run_id(self.key)

    @property
    def total(self) -> int:
        return len(self.grid.points())

    def add(self, point: Point, trace: Trace) -> None:
        with self._lock:
            self.traces.setdefault(point.key, trace)

    def trace(self, point: Point | None) -> Trace | None:
        if point is None:
            return None
        with self._lock:
            return self.traces.get(point.key)

    def computed(self, start: int = 0) -> list[tuple[str, Trace]]:
        """The points computed so far, from the `start`-th on (in the order computed)."""
        with self._lock:
            return list(self.traces.items())[start:]

    def look_at(self, point: Point) -> None:
        """The sliders now show `point` (a re-route): the prefetch computes its τ_accept line next."""
        self.focus = point

    def missing(self) -> list[Point]:
        """The grid's points not computed yet in the order they are computed: every notch of the τ_accept line the
        visitor looks at (the run's own τ_slim and γ, or those of the last re-route), nearest first, then the rest
        of the grid nearest first (`Grid.line_first`)."""
        with self._lock:
            done = set(self.traces)
        return [p for p in self.grid.line_first(self.focus or Point.of(self.config)) if p.key not in done]

    def next_points(self, most: int) -> list[Point]:
        """The points to compute next, side by side (core.sweeps.together): the notches of the line in view not
        computed yet, nearest first, else the next `most` of the rest of the grid (`missing`)."""
        missing = self.missing()
        line = set(self.grid.line(self.focus or Point.of(self.config)))
        in_view = [p for p in missing if p in line]
        return (in_view or missing)[:most]

    def reliability_due(self) -> bool:
        """The run left its reliability data to the background (so its page did not wait for it) and the τ_accept
        line in view is computed: now its three teacher-forced passes, then the rest of the grid."""
        ready, notches = self.line_ready()
        return self.reliability_later and self.reliability is None and ready == notches

    def fidelity_due(self) -> bool:
        """The line's points landed with their words differing only (a browser page's run: the page draws those),
        and the line in view is computed: now the rest of their fidelity (token agreement; in reduced precision the
        full model's plain answer, a pass per token, longer than the line itself), then the rest of the grid."""
        ready, notches = self.line_ready()
        return self.fidelity_later and ready == notches

    def later_due(self) -> bool:
        """Something the run left for after its line is due now (`reliability_due`, `fidelity_due`), the line's
        readiness read once."""
        pending = (self.reliability_later and self.reliability is None) or self.fidelity_later
        if not pending:
            return False
        ready, notches = self.line_ready()
        return ready == notches

    def pace_s(self) -> float:
        """Seconds a point not computed yet takes, at this run's measured pace: the median wall time of the
        points computed after the run's own (their passes the memo did not hold), else the run's own wall time;
        0 for a recorded grid (its points are all there)."""
        with self._lock:
            walls = [t.wall_s for t in self.traces.values()]
        if self.recorded is not None or not walls:
            return 0.0
        later = sorted(walls[1:])
        return later[len(later) // 2] if later else walls[0]

    def line_ready(self, at: Point | None = None) -> tuple[int, int]:
        """(notches computed, notches) of the τ_accept line at `at` (default: where the visitor looks)."""
        line = self.grid.line(at or self.focus or Point.of(self.config))
        with self._lock:
            return sum(p.key in self.traces for p in line), len(line)


class GridStore:
    """Every run's grid by run key, behind one lock; recorded sweeps are pinned, live runs kept LRU."""

    def __init__(self, max_runs: int = MAX_RUNS) -> None:
        self._lock = threading.Lock()
        self._recorded: dict[tuple, RunGrid] = {}
        self._live: OrderedDict[tuple, RunGrid] = OrderedDict()
        self.max_runs = max_runs

    def pin(self, grid: RunGrid) -> None:
        """Keep a recorded sweep for good (it serves every visitor who reaches its run)."""
        with self._lock:
            self._recorded[grid.key] = grid

    def find(self, prompt: str, config: DecodeConfig, models: tuple[str, ...]) -> RunGrid | None:
        key = run_key(prompt, config, models)
        with self._lock:
            found = self._recorded.get(key) or self._live.get(key)
            if key in self._live:
                self._live.move_to_end(key)
            return found

    def for_trace(self, trace: Trace) -> RunGrid:
        """The grid of the run `trace` belongs to (made around the trace's own point when new); the trace is
        added as its point."""
        config = trace.config
        models = models_of(trace)
        grid = self.find(trace.prompt, config, models)
        if grid is None:
            grid = RunGrid(trace.prompt, config, default_grid(config), models)
            with self._lock:
                grid = self._live.setdefault(grid.key, grid)
                while len(self._live) > self.max_runs:
                    self._live.popitem(last=False)
        grid.add(Point.of(config), trace)
        return grid

    def by_id(self, grid_id: str) -> RunGrid | None:
        with self._lock:
            return next((g for g in (*self._recorded.values(), *self._live.values()) if g.id == grid_id), None)

    def live_points(self) -> tuple[int, int]:
        """(live grids kept, their computed points): what re-routes of live runs hold in memory."""
        with self._lock:
            return len(self._live), sum(len(g.traces) for g in self._live.values())

    def recorded(self) -> list[RunGrid]:
        with self._lock:
            return list(self._recorded.values())


GRIDS = GridStore()
