"""`python -m app.live_benchmark`: how long a threshold change takes in the app, as a printed table.

It drives the same functions the browser events call (`run_generate`, then `run_reroute`), on the
embedded model, from an empty memo: the first run, the background prefetch of neighbouring pairs,
a one-notch and a two-notch slider move, and a jump to a far pair. Memo misses count the model
predictions that had to be computed; wall seconds are measured on this machine.
"""

from __future__ import annotations

import argparse
import time

from app import session
from app.prefetch import PREFETCHER
from app.ui import run_generate, run_reroute
from core import DecodeConfig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt", default="Explain photosynthesis in two sentences.")
    parser.add_argument("--tokens", type=int, default=100)
    args = parser.parse_args(argv)
    bundle = session.get_bundle()
    bundle.memo.clear()
    d = DecodeConfig()

    def settings(tau_accept: float, tau_slim: float) -> tuple:
        return (d.mode, d.drafter, d.draft_route, d.slim_route, d.gamma, args.tokens, False, 0.8, 0.95, 0,
                tau_accept, tau_slim)

    print(f"{'step':46}{'seconds':>9}{'memo misses':>13}")
    start, misses = time.perf_counter(), bundle.memo.misses
    for _ in run_generate(args.prompt, *settings(d.tau_accept, d.tau_slim)):
        pass
    print(f"{f'first run at {d.tau_accept}/{d.tau_slim} (empty memo, with fidelity)':46}"
          f"{time.perf_counter() - start:9.2f}{bundle.memo.misses - misses:13d}")
    start, misses = time.perf_counter(), bundle.memo.misses
    PREFETCHER.wait()
    print(f"{f'background prefetch, {len(PREFETCHER.done)} neighbour pairs':46}"
          f"{time.perf_counter() - start:9.2f}{bundle.memo.misses - misses:13d}")
    moves = [("one notch", d.tau_accept - 0.05, d.tau_slim), ("two notches", d.tau_accept, d.tau_slim - 0.1),
             ("far jump", 0.5, 0.2)]
    for label, tau_accept, tau_slim in moves:
        PREFETCHER.wait()
        start, misses = time.perf_counter(), bundle.memo.misses
        for _ in run_reroute(args.prompt, *settings(round(tau_accept, 4), round(tau_slim, 4))):
            pass
        print(f"{f're-route, {label} to {tau_accept:.2f}/{tau_slim:.2f}':46}"
              f"{time.perf_counter() - start:9.2f}{bundle.memo.misses - misses:13d}")
    PREFETCHER.stop()


if __name__ == "__main__":
    main()
