"""`python -m app.tools.live_benchmark`: how long a threshold change takes in the app, as a printed table.

It drives the same stream the browser events use (`app.streaming.run`), on the embedded model,
from an empty memo: the first run, the background prefetch of neighbouring pairs, a one-notch and
a two-notch slider move, and a jump to a far pair. For each step: wall seconds to the first update
and to the last, memo misses (model predictions computed) and the bytes of the updates as JSON
(what a browser would download). Wall seconds are measured on this machine.
"""

from __future__ import annotations

import argparse
import json
import time

from app import streaming
from app.prefetch import PREFETCHER
from app.session import SESSIONS
from app.settings import Settings
from core.config import DecodeConfig


def payload_bytes(update: dict) -> int:
    """Rough size of an update as the browser receives it (figures as their plotly JSON)."""
    size = 0
    for value in update.values():
        if hasattr(value, "to_json"):
            size += len(value.to_json())
        elif isinstance(value, (str, int, float, list, dict)):
            size += len(json.dumps(value, default=str))
    return size


def measure(settings: Settings, previous: object = None, replay: bool = True) -> dict:
    """Run one stream to its end; return timings, memo misses, update count and payload bytes."""
    memo = SESSIONS.default_bundle().memo
    start, misses, first, sizes = time.perf_counter(), memo.misses, None, []

    def seen(update: dict) -> None:
        nonlocal first
        if first is None and "tokens" in update:
            first = time.perf_counter() - start
        sizes.append(payload_bytes(update))

    final = streaming.drain(streaming.run(settings, "benchmark", replay=replay, previous=previous), seen)
    return {"first_s": first or 0.0, "total_s": time.perf_counter() - start, "misses": memo.misses - misses,
            "updates": len(sizes), "bytes": sum(sizes), "trace": final.get("trace")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt", default="Explain photosynthesis in two sentences.")
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--prefetch-s", type=float, default=60.0, help="seconds to let the grid prefetch run")
    args = parser.parse_args(argv)
    SESSIONS.default_bundle().memo.clear()
    # the engine's defaults (self-drafting VIA-SD), not the app's opening preset: the README's numbers are for these
    base = Settings.of(DecodeConfig(max_new_tokens=args.tokens), prompt=args.prompt)
    print(f"{'step':46}{'first s':>9}{'total s':>9}{'misses':>8}{'updates':>9}{'KB sent':>9}")

    def row(label: str, r: dict) -> None:
        print(f"{label:46}{r['first_s']:9.2f}{r['total_s']:9.2f}{r['misses']:8d}{r['updates']:9d}"
              f"{r['bytes'] / 1024:9.1f}")

    first = measure(base)
    row(f"first run at {base.tau_accept}/{base.tau_slim} (empty memo, with fidelity)", first)
    start = time.perf_counter()
    PREFETCHER.wait(timeout=args.prefetch_s)  # the whole grid takes minutes: time the part done meanwhile
    PREFETCHER.stop()
    grid = PREFETCHER.grid
    done = f"{len(grid.traces)} of {grid.total}" if grid is not None else "0"
    print(f"{f'background prefetch, {done} grid points':46}{'':9}{time.perf_counter() - start:9.2f}")
    previous = first["trace"]
    moves = [("one notch", base.tau_accept - 0.05, base.tau_slim),
             ("two notches", base.tau_accept, base.tau_slim - 0.1), ("far jump", 0.5, 0.2)]
    for label, tau_accept, tau_slim in moves:
        result = measure(base.with_(tau_accept=round(tau_accept, 4), tau_slim=round(tau_slim, 4)), previous)
        PREFETCHER.stop()  # each move schedules the rest of the grid again: keep the next move's CPU to itself
        row(f"re-route, {label} to {tau_accept:.2f}/{tau_slim:.2f}", result)
        previous = result["trace"]
    PREFETCHER.stop()


if __name__ == "__main__":
    main()
