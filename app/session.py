"""Process-wide state of the app in one object with one lock: model bundles, choices, stop flags.

The embedded bundle is loaded once per process and shared by every visitor. Every bundle here
shares one prediction memo (what makes threshold dragging live), so `VIASD_MEMO_BYTES` bounds the
process, not each model: the one-hour soak held three 512 MiB memos still filling at minute 60.
A visitor may load another verifier / drafter pair (the offline Qwen2.5-Coder pair, say); one
copy of each pair serves every visitor who picks it, and at most `MAX_EXTRA_BUNDLES` such pairs
stay in memory. A visitor whose pair was dropped to make room is told so (`ModelsEvictedError`)
rather than silently moved back to the embedded model. Stop works in two ways: Gradio's
`cancels=` ends streaming generators, and the per-session flag here is polled by core loops
between rounds.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from core import EMBEDDED_ID, ModelBundle, ViaSdError, load_bundle
from core.limits import MAX_EXTRA_BUNDLES, MAX_SESSIONS
from core.models.loading import drafter_setting
from core.models.memo import PredictionMemo

IDLE_FORGET_S = 6 * 3600.0
"""A browser session untouched this long is forgotten (its stop flag and model choice); so is the least recently
seen one beyond `MAX_SESSIONS` (Gradio keeps the same number of sessions' state, app.ui)."""


class ModelsEvictedError(ViaSdError):
    """The pair this visitor loaded was unloaded to make room for other visitors' models."""


@dataclass
class _Loading:
    """One pair being loaded: its lock and how many callers hold or wait for it (the entry goes with the last)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    callers: int = 0


@dataclass
class _Visitor:
    choice: tuple[str, str] | None = None  # (verifier, drafter) when not the embedded default
    quant: str | None = None  # the drafter setting of that choice, by name (None: no separate drafter)
    stop: threading.Event = field(default_factory=threading.Event)
    running: int = 0  # model jobs of this session in progress (Stop says so when there are none)
    seen: float = field(default_factory=time.monotonic)


class Sessions:
    """Bundles and per-visitor state behind one lock; loading a model happens outside it."""

    def __init__(self, loader: Callable[..., ModelBundle] = load_bundle) -> None:
        self._lock = threading.Lock()
        self._default_load = threading.Lock()  # one embedded load at a time, without blocking the state lock
        self._loader = loader
        self._default: ModelBundle | None = None
        self._extra: OrderedDict[tuple[str, str, str | None], ModelBundle] = OrderedDict()
        self._visitors: OrderedDict[str, _Visitor] = OrderedDict()
        self._loading: dict[tuple[str, str, str | None], _Loading] = {}  # only pairs being loaded (a failure: none)
        self.memo = PredictionMemo()  # keys name the model object (core.models.memo.memo_key): safe to share

    def _adopt(self, bundle: ModelBundle) -> ModelBundle:
        """Give a freshly loaded bundle the process's one memo (its own, still empty, is dropped)."""
        bundle.memo = self.memo
        return bundle

    # -- visitors ---------------------------------------------------------------------------
    def _visitor(self, session: str) -> _Visitor:
        """This session's record (caller holds the lock); prunes sessions idle for long."""
        now = time.monotonic()
        while self._visitors and (len(self._visitors) > MAX_SESSIONS
                                  or now - next(iter(self._visitors.values())).seen > IDLE_FORGET_S):
            self._visitors.popitem(last=False)  # least recently seen first
        visitor = self._visitors.setdefault(session or "anonymous", _Visitor())
        self._visitors.move_to_end(session or "anonymous")
        visitor.seen = now
        return visitor

    def start_job(self, session: str) -> Callable[[], bool]:
        """Clear this session's stop flag and return the `should_stop` callable for core loops."""
        with self._lock:
            flag = self._visitor(session).stop
        flag.clear()
        return flag.is_set

    @contextlib.contextmanager
    def job(self, session: str) -> Iterator[Callable[[], bool]]:
        """A model job of this session: yields `should_stop`; Stop knows whether anything is running."""
        should_stop = self.start_job(session)
        with self._lock:
            self._visitor(session).running += 1
        try:
            yield should_stop
        finally:
            with self._lock:
                self._visitor(session).running -= 1

    def running(self, session: str) -> bool:
        """Whether a job of this session is in progress."""
        with self._lock:
            visitor = self._visitors.get(session)
            return visitor is not None and visitor.running > 0

    def request_stop(self, session: str) -> bool:
        """Ask the running job of this browser session to stop at its next round; False if none runs."""
        with self._lock:
            visitor = self._visitor(session)
            visitor.stop.set()
            return visitor.running > 0

    def forget(self, session: str) -> None:
        """Drop this session's record (its tab closed: app.closed_tabs), unless one of its jobs still runs."""
        with self._lock:
            visitor = self._visitors.get(session)
            if visitor is not None and visitor.running == 0:
                del self._visitors[session]

    def visitor_count(self) -> int:
        """Visitors with a record (bounded by MAX_SESSIONS; the soak and the leak test read it)."""
        with self._lock:
            return len(self._visitors)

    # -- models -----------------------------------------------------------------------------
    def default_bundle(self) -> ModelBundle:
        """The shared embedded bundle, loading it on first use (concurrent callers wait for one load)."""
        if self._default is None:
            with self._default_load:
                if self._default is None:
                    self._default = self._adopt(self._loader())
        return self._default

    def is_loaded(self) -> bool:
        return self._default is not None

    def bundle(self, session: str = "") -> ModelBundle:
        """The bundle this browser session chose; raises ModelsEvictedError if it was unloaded."""
        with self._lock:
            visitor = self._visitor(session)
            key = visitor.choice
            chosen = self._extra.get((*key, visitor.quant)) if key else None
        if key and chosen is None:
            verifier, drafter = key
            names = verifier + (f" + drafter {drafter}" if drafter else "")
            raise ModelsEvictedError(
                f"the models you loaded ({names}) were unloaded to make room for other visitors' models; "
                "press Load models to load them again, or clear the Verifier box to use the embedded model")
        return chosen if chosen is not None else self.default_bundle()

    def choose(self, session: str, verifier: str, drafter: str, progress: Callable | None = None,
               drafter_quant: str | None = None) -> ModelBundle:
        """Load (or reuse) a verifier / drafter pair for this session; a failed load changes nothing.

        Every visitor who picks a pair (and drafter setting, `drafter_quant`: empty is the pair's recommended one)
        shares one copy of it: concurrent first picks wait for one load (a lock per pair), and
        `progress(stage, done, total)` hears that load's steps."""
        verifier, drafter = (verifier or "").strip() or EMBEDDED_ID, (drafter or "").strip()
        quant = drafter_setting(verifier, drafter, drafter_quant)
        if verifier == EMBEDDED_ID and not drafter:
            with self._lock:
                self._visitor(session).choice = None
            return self.default_bundle()
        key = (verifier, drafter, quant)
        with self._lock:
            loading = self._loading.setdefault(key, _Loading())
            loading.callers += 1
        try:
            with loading.lock:  # slow: outside the state lock, one load per pair
                with self._lock:
                    bundle = self._extra.get(key)
                if bundle is None:
                    extra = {"progress": progress} if progress is not None else {}
                    if quant:
                        extra["drafter_quant"] = quant
                    shared = self._loaded_verifier(verifier)
                    if shared is not None:  # another drafter setting of this pair: one verifier copy for both
                        extra["loaded_verifier"] = shared
                    bundle = self._adopt(self._loader(verifier, drafter or None, **extra))
        finally:
            with self._lock:
                loading.callers -= 1
                if not loading.callers:
                    del self._loading[key]
        with self._lock:
            self._extra[key] = bundle
            self._extra.move_to_end(key)
            while len(self._extra) > MAX_EXTRA_BUNDLES:
                self._extra.popitem(last=False)
            visitor = self._visitor(session)
            visitor.choice, visitor.quant = (verifier, drafter), quant
        return bundle

    def _loaded_verifier(self, verifier: str) -> object | None:
        """The verifier model of a kept pair named `verifier` (the soak loaded the pair's 1.5B twice, 18 GB)."""
        with self._lock:
            return next((b.verifier for (name, _, _), b in self._extra.items() if name == verifier), None)

    def tokenizer_for(self, verifier_name: str) -> object:
        """The tokenizer of a loaded verifier by name (the embedded one when that model is gone)."""
        with self._lock:
            bundles = list(self._extra.values())
        for bundle in bundles:
            if bundle.verifier.name == verifier_name:
                return bundle.verifier.tokenizer
        return self.default_bundle().verifier.tokenizer

    def summary(self, session: str = "") -> str:
        """One line naming the model in use, for the status bar."""
        try:
            if self._default is None and self.choice(session) is None:
                return "model not loaded yet"
            v = self.bundle(session).verifier
            drafter_model = self.bundle(session).drafter
        except ModelsEvictedError as exc:
            return str(exc)
        drafter = f" · drafter model {drafter_model.label}" if drafter_model else ""
        quant = "" if v.verifier_quant == "none" else f", {v.verifier_quant} weights and activations per token"
        return (f"{v.name} · {v.num_layers} layers · {str(v.dtype).replace('torch.', '')}{quant} on {v.device} · "
                f"loaded in {v.load_seconds:.1f} s{drafter}")

    def choice(self, session: str) -> tuple[str, str] | None:
        """(verifier, drafter) this session loaded, or None while it uses the embedded model."""
        with self._lock:
            return self._visitor(session).choice

    def drafter_quant(self, session: str) -> str | None:
        """The drafter setting of this session's pair, by name (None without a separate drafter)."""
        with self._lock:
            return self._visitor(session).quant

    def bundles(self) -> dict[str, ModelBundle]:
        """Every bundle in memory by a short name ("embedded", or the pair's verifier and drafter setting)."""
        with self._lock:
            extra = {f"{v.split('/')[-1]}{f' [{q}]' if q else ''}": b for (v, _, q), b in self._extra.items()}
        return {**({"embedded": self._default} if self._default is not None else {}), **extra}

    def warm_up_in_background(self) -> threading.Thread:
        """Start loading the embedded model so the first visitor does not wait for it."""
        thread = threading.Thread(target=self.default_bundle, name="viasd-warm-up", daemon=True)
        thread.start()
        return thread


SESSIONS = Sessions()


def session_id(request: object | None) -> str:
    """The browser session of a Gradio request ("anonymous" for direct calls)."""
    return getattr(request, "session_hash", None) or "anonymous"
