"""What the app holds in its bounded stores, as one log line a minute (with VIASD_HELD_LOG=1; the soak sets it).

Resident memory alone cannot tell a bounded store filling up from a leak: the one-hour soak saw +10 % and could
not say which. Each line names every store that grows with use (the prediction memo all bundles share, the live grids
and their points, the fidelity answers, the sessions and the page feed) and its size now, and the live threads by
kind; `app.tools.soak` reads the lines back into its per-minute table and chart.
"""

from __future__ import annotations

import itertools
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
TENSOR_PREFIX = "[tensors] "
TRACE_FROM_MINUTE = int(os.environ.get("VIASD_HELD_TRACE_FROM", "8"))
"""The minute from which a diagnostic run traces Python's allocations (tracing the model loads would take minutes)."""
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
            "threads": thread_census(), "native_threads": native_thread_count(), "handles": handle_census(),
            "malloc_mb": native_memory.allocator_mb(), "python_blocks_k": sys.getallocatedblocks() // 1000}


def native_thread_count() -> int | None:
    """Threads of this process that Python did not start (torch's OpenMP teams, the tokenizer's pool): /proc's
    tasks less the Python threads' native ids; None where /proc is not."""
    try:
        tasks = {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return None
    return len(tasks - {thread.native_id for thread in threading.enumerate()})


def handle_census(pid: int | str = "self") -> dict[str, int]:
    """A process's open file handles by kind (socket, pipe, anon_inode:...) and regular files by path: the soak
    counts them from outside, the app logs them each minute, so a handle that is never given back shows by name.
    Empty where /proc is not (or the process is gone)."""
    kinds: Counter[str] = Counter()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return {}
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue  # closed meanwhile, or the listing's own handle
        kinds[re.sub(r"\[\d+\]$", "", target).rstrip(":")] += 1
    return dict(kinds)


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

    def loop() -> None:
        for minute in itertools.count():
            print(line(state_holder()), flush=True)
            if trace_heap and minute == TRACE_FROM_MINUTE:
                tracemalloc.start(TRACE_FRAMES)  # from here: tracing the model loads would take many minutes
            if tracemalloc.is_tracing():
                print(heap_line(), flush=True)
                print(tensor_line(), flush=True)
            time.sleep(period_s)

    thread = threading.Thread(target=loop, name="viasd-held-log", daemon=True)
    thread.start()
    return thread


def heap_line(top: int = 12) -> str:
    """Python's largest allocation sites among the blocks allocated since tracing began and still alive (with
    VIASD_HELD_TRACEMALLOC=1, a diagnostic run: it slows the app), so a site that grows minute after minute is a
    slow leak's, however small beside the memo: `[heap] {"all sites": KiB, "file:line <- caller": KiB, ...}`. The
    total beside glibc's heap in use says whether a growth is Python's at all."""
    snapshot = tracemalloc.take_snapshot()
    stats = snapshot.statistics("traceback")

    def where(frame: tracemalloc.Frame) -> str:
        return f"{frame.filename.rsplit('site-packages/', 1)[-1]}:{frame.lineno}"

    sites = {"all sites": round(sum(stat.size for stat in stats) / 1024)}
    sites.update({" <- ".join(where(f) for f in stat.traceback): round(stat.size / 1024) for stat in stats[:top]})
    return HEAP_PREFIX + json.dumps(sites, separators=(",", ":"))


def tensor_line() -> str:
    """Live torch tensors on the CPU by dtype, counted through the garbage collector, storage shared once
    (diagnostic only: it walks every object). Tensor bytes are malloc'd outside tracemalloc's view, so a growth of
    glibc's heap with Python's sites flat shows here or nowhere in Python."""
    import gc

    import torch

    seen: set[int] = set()
    count: Counter[str] = Counter()
    mb: Counter[str] = Counter()
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.Tensor) and obj.device.type == "cpu" and not obj.is_meta:
            kind = str(obj.dtype).removeprefix("torch.")
            count[kind] += 1
            storage = obj.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                mb[kind] += storage.nbytes() / 2**20
    return TENSOR_PREFIX + json.dumps({k: [count[k], round(mb[k], 1)] for k in sorted(count)},
                                      separators=(",", ":"))


def parse(text: str) -> list[dict]:
    """The held lines of an app log, in order (other lines ignored)."""
    return [json.loads(row[len(PREFIX):]) for row in text.splitlines() if row.startswith(PREFIX)]
