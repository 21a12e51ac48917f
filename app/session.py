"""Process-wide state of the app: the one model bundle, and per-browser-session stop flags.

The bundle is loaded once per process (its prediction memo is what makes threshold dragging live)
and shared by every visitor; events that run it share one Gradio concurrency group, so only one
runs at a time. Stop works in two ways: Gradio's `cancels=` ends streaming generators at the next
round, and the flag set here is polled by loops that do not yield (the threshold grid).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from core import DecodeConfig, ModelBundle, load_bundle

_bundle: ModelBundle | None = None
_load_seconds = 0.0
_load_lock = threading.Lock()
_stop_flags: dict[str, threading.Event] = {}
_flags_lock = threading.Lock()


def get_bundle() -> ModelBundle:
    """The shared bundle, loading it on first use (thread-safe: concurrent callers wait for one load)."""
    global _bundle, _load_seconds
    if _bundle is None:
        with _load_lock:
            if _bundle is None:
                start = time.perf_counter()
                _bundle = load_bundle()
                _load_seconds = time.perf_counter() - start
    return _bundle


def is_loaded() -> bool:
    return _bundle is not None


def model_summary() -> str:
    """One line naming the loaded model, for the status bar."""
    if _bundle is None:
        return "model not loaded yet"
    v = _bundle.verifier
    return (f"{v.name} · {v.num_layers} layers · {str(v.dtype).replace('torch.', '')} on {v.device} · "
            f"loaded in {_load_seconds:.1f} s")


def warm_up_in_background() -> threading.Thread:
    """Start loading the model so the first visitor does not wait for it."""
    thread = threading.Thread(target=get_bundle, name="viasd-warm-up", daemon=True)
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
