"""Several grid points computed together: their runs take turns in one thread and share their model passes.

Why: the low notches of a τ_accept line each branch from the run early and then cost a run of their own, mostly
one-token drafter passes that are bound by reading the weights (docs/benchmarks.md). Run side by side, each
point's pass of one model and route goes into one batched pass (core.decoding.shared_pass), so k points cost
about as many passes as the longest of them.

How: each point's `generate` runs in its own greenlet, all in the calling thread (the app's model thread: one
OpenMP team for all model work). A scorer that needs the model hands its pass to the hub and waits; when every
unfinished run waits, the hub runs the waiting passes, grouped by model and route, one batched pass a group
(identical passes once), and resumes each run with its logits. Memo hits never wait: a run replays what another
already computed. Nothing of the decoding loop changes; only where a scorer's forward pass runs.

Clocks: a shared pass's seconds are split evenly among the runs in it, and a run's round times count the other
runs' turns, so a point computed here is not timed alone (its first pass is the run's, replayed from the memo, so
the app never shows a measured speed-up for it anyway: app.views.cards.measured_tag).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from itertools import groupby

import greenlet

from core.config import DecodeConfig
from core.decoding.engine import generate
from core.decoding.shared_pass import SHARED_PASSES, Request, forward_together
from core.decoding.timing import Stopwatch
from core.models.loading import ModelBundle
from core.trace import Trace


class _Hub:
    """Collects the waiting runs' passes and runs them, one batched pass per model and route."""

    def __init__(self) -> None:
        self.waiting: list[tuple[greenlet.greenlet, Request]] = []
        self.scorers: dict[greenlet.greenlet, set] = {}  # each run's scorers that asked for a pass

    def forward(self, scorer: object, tokens: list[int], first: int, last: int) -> tuple[object, float]:
        """Called by a run's scorer (Scorer.predict): wait for the hub, come back with (logits, seconds), the
        seconds being this run's share of the batched pass."""
        self.waiting.append((greenlet.getcurrent(), Request(scorer, list(tokens), first, last)))
        self.scorers.setdefault(greenlet.getcurrent(), set()).add(scorer)
        return greenlet.getcurrent().parent.switch()

    def end(self, run: greenlet.greenlet) -> None:
        """End a run before its time (stopped): its scorers leave their KV caches to the pool, as a finished run's
        do, so computing it again later reads only what it had not computed (core.models.kv_pool)."""
        run.throw(greenlet.GreenletExit)
        for scorer in self.scorers.pop(run, ()):
            scorer.release()

    def run_waiting(self, stop: Callable[[], bool]) -> list[tuple[greenlet.greenlet, tuple[object, float]]]:
        """Every waiting pass, each group of one model and route as one batched pass; what to resume each run with
        (a run whose group did not run because `stop` said so is left waiting)."""
        waiting, self.waiting = self.waiting, []
        resumed = []
        key = lambda item: item[1].scorer.memo_key  # noqa: E731
        for _, group in groupby(sorted(waiting, key=key), key=key):
            if stop():
                break
            group = list(group)
            distinct: dict[tuple, Request] = {}
            for _, request in group:  # two runs still on the same text ask for the same rows: computed once
                distinct.setdefault((tuple(request.tokens[:request.last]), request.first), request)
            with Stopwatch(group[0][1].scorer.device) as watch:
                logits = dict(zip(distinct, forward_together(list(distinct.values())), strict=True))
            share = watch.seconds / len(group)
            for run, request in group:
                resumed.append((run, (logits[(tuple(request.tokens[:request.last]), request.first)], share)))
        return resumed


def generate_together(bundle: ModelBundle, prompt: str, configs: list[DecodeConfig], *,
                      should_stop: Callable[[], bool] | None = None,
                      on_trace: Callable[[int, Trace], None] | None = None) -> list[Trace | None]:
    """`generate(bundle, prompt, config)` for every config, side by side with shared passes (memo-allowed runs:
    grid points, whose passes the memo keeps). `on_trace(i, trace)` hears each run as it finishes, in this
    greenlet (so what it computes is not shared). When `should_stop` says so, every unfinished run ends before
    the next pass, its trace None."""
    hub = _Hub()
    traces: list[Trace | None] = [None] * len(configs)

    def body(i: int) -> None:
        SHARED_PASSES.set(hub)
        traces[i] = generate(bundle, prompt, configs[i])

    runs = [greenlet.greenlet(functools.partial(body, i)) for i in range(len(configs))]
    for run in runs:
        run.gr_context = contextvars.copy_context()  # the caller's context variables; the hub set in the run's copy
    stop = should_stop or (lambda: False)
    ready: list[tuple[greenlet.greenlet, tuple]] = [(run, ()) for run in runs]
    try:
        while ready and not stop():
            for run, value in ready:
                run.switch(*value)  # back here when the run waits on a pass or has finished
                if run.dead and on_trace is not None:
                    on_trace(runs.index(run), traces[runs.index(run)])
            ready = [(run, (value,)) for run, value in hub.run_waiting(stop)]
    finally:
        for run in runs:  # stopped, or an error in one run: the others end here, in their own thread
            if not run.dead:
                hub.end(run)
    return traces
