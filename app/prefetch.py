"""Warm the prediction memo for the threshold pairs next to the current one, while nobody waits.

A threshold pair the memo has seen re-renders in a fraction of a second; a new one must run the
model for every prefix it has not visited (seconds on a 2-core CPU). So after each run the app
computes, in one background thread, the pairs one slider notch away (nearest first). Any model
event stops it at its next round and waits for it to exit, so foreground runs, and in particular
"Re-run for real timing", never share the CPU with it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator

from app.fidelity_cache import FIDELITY
from core import DecodeConfig, ModelBundle, generate
from core.round_policy import in_order, thresholds_apply
from core.trace import Trace

log = logging.getLogger(__name__)

STEP = 0.05
"""The threshold sliders' step: prefetched pairs are exactly the values a slider can take."""

MAX_PAIRS = 8
MAX_SHARES = 256


def run_key(prompt: str, config: DecodeConfig) -> tuple:
    """A run up to its thresholds: the prompt and every setting but τ_accept and τ_slim."""
    return prompt, config.with_(tau_accept=0.0, tau_slim=0.0)


def tier_shares(trace: Trace) -> dict[int, float]:
    """Share of the output's tokens each tier decided (what the cockpit's prediction line shows)."""
    counts = Counter(int(t.tier) for t in trace.tokens)
    return {tier: counts[tier] / max(len(trace.tokens), 1) for tier in (1, 2, 3)}


def neighbour_pairs(tau_accept: float, tau_slim: float, step: float = STEP, limit: int = MAX_PAIRS) -> list[tuple]:
    """Valid (tau_accept, tau_slim) pairs one or two notches away, nearest first (τ_slim 1.0 goes with any τ_accept)."""
    pairs = []
    for da in range(-2, 3):
        for ds in range(-2, 3):
            a, s = round(tau_accept + da * step, 4), round(tau_slim + ds * step, 4)
            if (da, ds) != (0, 0) and 0.0 <= s <= 1.0 and 0.0 <= a <= 1.0 and in_order(a, s):
                pairs.append((abs(da) + abs(ds), abs(da) + abs(ds) > 1 and da * ds != 0, (a, s)))
    return [pair for *_, pair in sorted(pairs)][:limit]


class Prefetcher:
    """One background job at a time; foreground model events pre-empt it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self.done: list[tuple[float, float]] = []  # pairs the last job finished (for tests and the status line)
        self.scheduled = 0  # jobs started so far: a benchmark waits for the one a run schedules after its last update
        self._shares: OrderedDict[tuple, dict[int, float]] = OrderedDict()  # (run_key, τ pair) -> tier shares

    def shares(self, prompt: str, config: DecodeConfig, tau_accept: float, tau_slim: float) -> dict[int, float] | None:
        """The tier shares of the run at this threshold pair, if a prefetch computed it (the engine's own
        re-route, so exactly what releasing the slider will show); None otherwise."""
        with self._lock:
            return self._shares.get((run_key(prompt, config), round(tau_accept, 4), round(tau_slim, 4)))

    def remember(self, prompt: str, config: DecodeConfig, trace: Trace) -> None:
        """Record a finished run's tier shares under its threshold pair (prefetched runs and re-routes)."""
        key = (run_key(prompt, config), round(config.tau_accept, 4), round(config.tau_slim, 4))
        with self._lock:
            self._shares[key] = tier_shares(trace)
            self._shares.move_to_end(key)
            while len(self._shares) > MAX_SHARES:
                self._shares.popitem(last=False)

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Enter before every model event: stops the background job and waits until it has exited."""
        with self._lock:
            self._cancel.set()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=30)  # it stops at its next round boundary
        yield

    def schedule(self, bundle: ModelBundle, prompt: str, config: DecodeConfig) -> None:
        """Start warming the neighbours of `config`'s thresholds (VIA-SD only: other modes apply none)."""
        if not thresholds_apply(config.mode):  # no threshold acts in this mode: nothing to warm
            return
        with self._lock:
            self._cancel.set()  # a job still running (another visitor's) gives way to the newer one
            self._cancel = threading.Event()
            cancel = self._cancel
            self.done = []
            self.scheduled += 1
            self._thread = threading.Thread(target=self._run, args=(bundle, prompt, config, cancel),
                                            name="viasd-prefetch", daemon=True)
            self._thread.start()

    def _run(self, bundle: ModelBundle, prompt: str, config: DecodeConfig, cancel: threading.Event) -> None:
        try:
            for tau_accept, tau_slim in neighbour_pairs(config.tau_accept, config.tau_slim):
                if cancel.is_set():
                    return
                trace_config = config.with_(tau_accept=tau_accept, tau_slim=tau_slim)
                trace = generate(bundle, prompt, trace_config, should_stop=cancel.is_set)
                if trace.stop_reason == "cancelled" or cancel.is_set():
                    return
                FIDELITY.attach(bundle, trace)  # warms the fidelity cache (and the memo) for this pair
                self.remember(prompt, trace_config, trace)
                self.done.append((tau_accept, tau_slim))
        except Exception:  # a background helper must never take the app down
            log.exception("prefetch failed")

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
