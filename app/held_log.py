"""What the app holds in its bounded stores, as one log line a minute (with VIASD_HELD_LOG=1; the soak sets it).

Resident memory alone cannot tell a bounded store filling up from a leak: the one-hour soak saw +10 % and could
not say which. Each line names every store that grows with use (the prediction memo all bundles share, the live grids
and their points, the fidelity answers, the sessions and the page feed) and its size now, and the live threads by
kind; `app.tools.soak` reads the lines back into its per-minute table and chart.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from typing import Any

PREFIX = "[held] "
HEAP_PREFIX = "[heap] "
TRACE_FRAMES = 3
EVERY_S = 60.0


def held(state_holder: Any = None) -> dict[str, object]:
    """The size of each store now; `at` is the wall clock (seconds since the epoch). With Gradio's StateHolder,
    also the sessions Gradio keeps state for (each a copy of the app's config and last outputs)."""
    # imported here: app.py imports this module before native_memory caps the arenas, which must precede torch
    from app import native_memory
    from app.fidelity_cache import FIDELITY
    from app.grids import GRIDS
    from app.session import SESSIONS
    from app.views.page_grid import FEED

    grids, points = GRIDS.live_points()
    memo = {"all models": round(SESSIONS.memo.bytes / 2**20, 1)}  # one memo serves every bundle (app.session)
    return {"at": round(time.time(), 1), "memo_mb": memo, "live_grids": grids, "live_points": points,
            "fidelity": len(FIDELITY), "sessions": SESSIONS.visitor_count(), "page_feed": len(FEED),
            "gradio_sessions": len(state_holder.session_data) if state_holder is not None else None,
            "threads": thread_census(), "native_threads": native_thread_count(),
            "malloc_mb": native_memory.allocator_mb(), "python_blocks_k": sys.getallocatedblocks() // 1000}


def native_thread_count() -> int | None:
    """Threads of this process that Python did not start (torch's OpenMP teams, the tokenizer's pool): /proc's
    tasks less the Python threads' native ids; None where /proc is not."""
    try:
        tasks = {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return None
    return len(tasks - {thread.native_id for thread in threading.enumerate()})


def thread_census() -> dict[str, int]:
    """Live threads by name, numbers folded ("AnyIO worker thread": 6, "Thread-N (process_request)": 1): the
    soak counts threads from /proc and can then say which kind came and went."""
    return dict(Counter(re.sub(r"\d+", "N", thread.name) for thread in threading.enumerate()))


def line(state_holder: Any = None) -> str:
    return PREFIX + json.dumps(held(state_holder), separators=(",", ":"))


def start_if_asked(state_holder: Callable[[], Any] = lambda: None,
                   period_s: float = EVERY_S) -> threading.Thread | None:
    """Print `line()` every `period_s` seconds for the life of the process, when VIASD_HELD_LOG is set."""
    if not os.environ.get("VIASD_HELD_LOG"):
        return None

    trace_heap = bool(os.environ.get("VIASD_HELD_TRACEMALLOC"))
    if trace_heap:
        tracemalloc.start(TRACE_FRAMES)

    def loop() -> None:
        while True:
            print(line(state_holder()), flush=True)
            if trace_heap:
                print(heap_line(), flush=True)
            time.sleep(period_s)

    thread = threading.Thread(target=loop, name="viasd-held-log", daemon=True)
    thread.start()
    return thread


def heap_line(top: int = 12) -> str:
    """Python's largest allocation sites now (with VIASD_HELD_TRACEMALLOC=1, a diagnostic run: it slows the app),
    so two minutes' lines show which site grows: `[heap] {"file:line <- caller": KiB, ...}`."""
    stats = tracemalloc.take_snapshot().statistics("traceback")[:top]
    def where(frame: tracemalloc.Frame) -> str:
        return f"{frame.filename.rsplit('site-packages/', 1)[-1]}:{frame.lineno}"

    sites = {" <- ".join(where(f) for f in stat.traceback): round(stat.size / 1024) for stat in stats}
    return HEAP_PREFIX + json.dumps(sites, separators=(",", ":"))


def parse(text: str) -> list[dict]:
    """The held lines of an app log, in order (other lines ignored)."""
    return [json.loads(row[len(PREFIX):]) for row in text.splitlines() if row.startswith(PREFIX)]
