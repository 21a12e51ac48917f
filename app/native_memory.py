"""Give the memory a finished run freed back to the system (glibc's allocator keeps it otherwise).

The soak found the app's resident memory climbing for half an hour while Python's own heap
(tracemalloc) grew by 20 MB: the growth was native. Each run allocates and frees hundreds of MB of
tensors on whichever worker thread Gradio hands it; glibc gives each thread its own arena (up to 8
per core) and keeps what is freed in the middle of an arena for later, so the freed space of many
arenas piles up. Two remedies at the root, both no-ops where glibc is not the allocator (macOS,
musl): at start-up, cap the arenas (`limit_arenas`); every few seconds, hand free pages back
(`trim`, glibc's `malloc_trim(0)`, which frees whole free pages inside every arena too).

A third kind of growth is not garbage but two caches: where torch runs bf16 matmuls through oneDNN, it keeps a
compiled kernel for every pass shape it has seen, in ideep's cache and in oneDNN's own, 1024 entries each. Each new
prompt length adds a few (about 3 MB per new length on SmolLM2 with AMX), so a public app fills them for hours.
`bound_kernel_caches` caps both before the first pass; the hot shapes (decode steps, verification passes) stay cached.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
import threading
import time

M_ARENA_MAX = -8
"""mallopt's parameter number for the arena cap (glibc's malloc.h)."""
ARENAS = 2
"""Arenas when capped: one per core of the development machine."""
TRIM_EVERY_S = 10.0
"""How often the trimmer hands free pages back: a few runs' worth of garbage at most stays resident."""

KERNEL_CACHES = {"LRU_CACHE_CAPACITY": 64, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": 256}
"""Entries kept by ideep's cache (torch's oneDNN layer) and by oneDNN's primitive cache; both default to 1024. A
capped cache keeps the shapes used most recently, and a miss in ideep's is served by oneDNN's."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim, libc.mallopt  # noqa: B018  (glibc only: musl has neither)
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap the allocator's arenas (for those created from now on); False where it cannot."""
    libc = _libc()
    return bool(libc and libc.mallopt(M_ARENA_MAX, arenas) == 1)


def bound_kernel_caches(entries: dict[str, int] = KERNEL_CACHES) -> dict[str, str]:
    """Cap torch's per-shape kernel caches (read when the first oneDNN pass runs, so call this before any model
    pass); a value already in the environment is the operator's and stays. Returns what is in force."""
    return {name: os.environ.setdefault(name, str(count)) for name, count in entries.items()}


def trim() -> bool:
    """Return free native memory to the system; True if some was returned, False if none (or not glibc)."""
    libc = _libc()
    return bool(libc and libc.malloc_trim(0))


def start_trimmer(period_s: float = TRIM_EVERY_S) -> threading.Thread:
    """One daemon thread that calls `trim` every `period_s` seconds for the life of the process: it covers every
    kind of event (runs, re-routes, Compare, sweeps, the prefetch) without a hook in each."""
    def loop() -> None:
        while True:
            time.sleep(period_s)
            trim()

    thread = threading.Thread(target=loop, name="viasd-malloc-trim", daemon=True)
    thread.start()
    return thread


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def allocator_mb() -> dict[str, float] | None:
    """glibc's own account (mallinfo2): MB in use by the program, and MB freed but still held in its arenas;
    None where glibc is not the allocator. Resident growth with `in_use` flat is the allocator's, not a leak."""
    libc = _libc()
    mallinfo2 = getattr(libc, "mallinfo2", None) if libc else None  # glibc >= 2.33
    if mallinfo2 is None:
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {"in_use": round((info.uordblks + info.hblkhd) / 2**20, 1), "free_kept": round(info.fordblks / 2**20, 1)}
