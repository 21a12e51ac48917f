"""`python -m core.tools.model_cache`: what the offline models' cache holds, and how fast the pair reloads.

    python -m core.tools.model_cache                 # each model's converted copy: dtype, size; wheels kept
    python -m core.tools.model_cache --reload 3      # also time 3 reloads of the pair from the copies as they are

The reload loads each converted folder as a local folder (`load_model(folder)`), so it never installs,
converts or rewrites anything: pointed at an old float32 cache (`VIASD_CACHE_DIR`) it times that cache,
pointed at a bf16 one it times that. Peak resident memory and the load average are printed beside.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

from core.models.catalog import QWEN_CODER_05B, QWEN_CODER_15B, WHEEL_MODELS
from core.models.converted import bytes_on_disk, stored_dtype
from core.models.install import converted_dir
from core.models.loading import load_model
from core.models.resources import cache_dir


def cache_table() -> str:
    """One row per offline model: its converted copy (dtype, GB) and the bytes of its wheels still on disk."""
    root = cache_dir()
    rows = ["| model | converted copy | dtype | GB on disk | wheels kept |", "|---|---|---|---|---|"]
    for model in WHEEL_MODELS.values():
        folder = converted_dir(model, root)
        wheels = sum((root / "wheels" / w.filename).stat().st_size for w in model.wheels
                     if (root / "wheels" / w.filename).exists())
        rows.append(f"| {model.name} | {'yes' if folder else 'no'} | {stored_dtype(folder) if folder else '—'} | "
                    f"{bytes_on_disk(folder) / 1e9 if folder else 0:.2f} | {wheels / 1e9:.2f} GB |")
    rows.append(f"\nwhole cache {root}: {bytes_on_disk(root) / 1e9:.2f} GB")
    return "\n".join(rows)


def time_reloads(times: int, dtype: str = "bfloat16") -> list[tuple[float, float]]:
    """(1.5B seconds, 0.5B seconds) of `times` reloads of the pair from its converted folders, as they are."""
    root = cache_dir()
    folders = [converted_dir(model, root) for model in (QWEN_CODER_15B, QWEN_CODER_05B)]
    if None in folders:
        raise SystemExit(f"the pair is not installed in {root}: load it once first")
    seconds = []
    for _ in range(times):
        pair = []
        for folder in folders:
            started = time.perf_counter()
            loaded = load_model(str(folder), device="cpu", dtype=dtype)
            pair.append(time.perf_counter() - started)
            del loaded
        seconds.append((pair[0], pair[1]))
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reload", type=int, default=0, help="time this many reloads of the pair (0: none)")
    parser.add_argument("--dtype", default="bfloat16", help="precision of the timed reloads (default bfloat16)")
    args = parser.parse_args(argv)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · load average "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(cache_table())
    if args.reload:
        seconds = time_reloads(args.reload, args.dtype)
        for n, (big, small) in enumerate(seconds, start=1):
            print(f"reload {n}: 1.5B {big:.1f} s + 0.5B {small:.1f} s = {big + small:.1f} s ({args.dtype})")
        totals = [big + small for big, small in seconds]
        print(f"median {statistics.median(totals):.1f} s · peak resident "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.1f} GB · load average "
              f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
