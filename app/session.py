"""Process-wide state of the app: loaded model bundles, each visitor's model choice, stop flags.

The embedded bundle is loaded once per process (its prediction memo is what makes threshold
dragging live) and shared by every visitor. A visitor may load another verifier / drafter pair;
it is kept for that browser session only, and at most MAX_EXTRA_BUNDLES such pairs stay in memory.
Events that run a model share one Gradio concurrency group, so only one runs at a time.
Stop works in two ways: Gradio's `cancels=` ends streaming generators at the next
round, and the flag set here is polled by loops that do not yield (the threshold grid).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from core import EMBEDDED_ID, DecodeConfig, ModelBundle, load_bundle

MAX_EXTRA_BUNDLES = 2
"""Other model pairs kept in memory besides the embedded default (least recently chosen dropped)."""

_bundle: ModelBundle | None = None
_load_seconds = 0.0
_load_lock = threading.Lock()
_extra: OrderedDict[tuple[str, str], ModelBundle] = OrderedDict()
_choice: dict[str, tuple[str, str]] = {}
_stop_flags: dict[str, threading.Event] = {}
_flags_lock = threading.Lock()


def _default_bundle() -> ModelBundle:
    """The shared embedded bundle, loading it on first use (concurrent callers wait for one load)."""
    global _bundle, _load_seconds
    if _bundle is None:
        with _load_lock:
            if _bundle is None:
                start = time.perf_counter()
                _bundle = load_bundle()
                _load_seconds = time.perf_counter() - start
    return _bundle


def get_bundle(session: str = "") -> ModelBundle:
    """The bundle this browser session chose (the embedded default unless it loaded another pair)."""
    key = _choice.get(session)
    with _load_lock:
        chosen = _extra.get(key) if key else None
    return chosen if chosen is not None else _default_bundle()


def choose_models(session: str, verifier: str, drafter: str) -> ModelBundle:
    """Load (or reuse) a verifier / drafter pair for this session; raises core.ViaSdError on bad ids.

    A failed load leaves the session's previous choice in place.
    """
    verifier, drafter = (verifier or "").strip() or EMBEDDED_ID, (drafter or "").strip()
    if verifier == EMBEDDED_ID and not drafter:
        _choice.pop(session, None)
        return _default_bundle()
    key = (verifier, drafter)
    with _load_lock:
        bundle = _extra.get(key)
    if bundle is None:
        bundle = load_bundle(verifier, drafter or None)  # slow; outside the lock
        with _load_lock:
            _extra[key] = bundle
            while len(_extra) > MAX_EXTRA_BUNDLES:
                _extra.popitem(last=False)
    with _load_lock:
        _extra.move_to_end(key)
    _choice[session] = key
    return bundle


def tokenizer_for(verifier_name: str) -> object:
    """The tokenizer of a loaded verifier by name (the embedded one when that model is gone)."""
    with _load_lock:
        for bundle in _extra.values():
            if bundle.verifier.name == verifier_name:
                return bundle.verifier.tokenizer
    return _default_bundle().verifier.tokenizer


def is_loaded() -> bool:
    return _bundle is not None


def model_summary(session: str = "") -> str:
    """One line naming the model in use, for the status bar."""
    if _bundle is None and session not in _choice:
        return "model not loaded yet"
    bundle = get_bundle(session)
    v = bundle.verifier
    drafter = f" · drafter model {bundle.drafter.name}" if bundle.drafter else ""
    return (f"{v.name} · {v.num_layers} layers · {str(v.dtype).replace('torch.', '')} on {v.device} · "
            f"loaded in {v.load_seconds:.1f} s{drafter}")


def warm_up_in_background() -> threading.Thread:
    """Start loading the model so the first visitor does not wait for it."""
    thread = threading.Thread(target=_default_bundle, name="viasd-warm-up", daemon=True)
    thread.start()
    return thread


def _flag(session: str) -> threading.Event:
    with _flags_lock:
        return _stop_flags.setdefault(session or "anonymous", threading.Event())


def request_stop(session: str) -> None:
    """Ask the running job of this browser session to stop at its next checkpoint."""
    _flag(session).set()


def start_job(session: str) -> Callable[[], bool]:
    """Clear this session's stop flag and return the `should_stop` callable for core loops."""
    flag = _flag(session)
    flag.clear()
    return flag.is_set


def build_config(mode: str, drafter: str, draft_route: str, slim_route: str, gamma: float, max_new_tokens: float,
                 sampling: bool, temperature: float, top_p: float, seed: float, tau_accept: float,
                 tau_slim: float) -> DecodeConfig:
    """Turn the UI's widget values into a validated DecodeConfig (raises core.ConfigError)."""
    return DecodeConfig(
        mode=mode, drafter=drafter, draft_route=(draft_route or "").strip(), slim_route=(slim_route or "").strip(),
        gamma=int(gamma), max_new_tokens=int(max_new_tokens),
        temperature=float(temperature) if sampling else 0.0, top_p=float(top_p) if sampling else 1.0,
        seed=int(seed), tau_accept=round(float(tau_accept), 4), tau_slim=round(float(tau_slim), 4),
    ).validate()
