"""`python -m app.tools.kernel_cache_probe`: does native memory grow per new pass shape (a cache) or per pass (a leak)?

The one-hour soak saw glibc's heap rise about 7 MB a minute under bf16. This probe runs one model in this process
(the embedded SmolLM2 by default, bf16): a prefill then 8 decode steps per prompt length, in phases of new lengths
and of lengths already seen, and prints glibc's heap in use (after `malloc_trim`) and the seconds of each phase.
Growth on new lengths and none on repeats is a per-shape cache. Run it once with torch's defaults and once with the
app's caps to compare (one process at a time: the timings need both cores):

    python -m app.tools.kernel_cache_probe            # torch's defaults (the caches hold 1024 entries each)
    python -m app.tools.kernel_cache_probe --capped   # the app's caps (app.native_memory.bound_kernel_caches)
"""

from __future__ import annotations

import argparse
import time

import torch

from app import native_memory

PHASES = [("one length 30 times", [32] * 30), ("new lengths 40-99", list(range(40, 100))),
          ("the same again", list(range(40, 100))), ("new lengths 100-159", list(range(100, 160))),
          ("new lengths 160-219", list(range(160, 220))), ("the same again", list(range(160, 220)))]
DECODE_STEPS = 8


def heap_mb() -> float:
    """glibc's heap in use, after handing free pages back (so only what is held counts)."""
    native_memory.trim()
    found = native_memory.allocator_mb()
    if found is None:
        raise SystemExit("this probe needs glibc's mallinfo2 (Linux, glibc 2.33 or later)")
    return found["in_use"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capped", action="store_true", help="apply the app's kernel cache caps first")
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    caps = native_memory.bound_kernel_caches() if args.capped else "torch's defaults"
    from core.models.loading import load_model  # after the caps: they are read at the first oneDNN pass

    model = load_model(dtype=args.dtype).model
    vocab = model.config.vocab_size

    @torch.inference_mode()
    def run(length: int) -> None:
        out = model(torch.randint(0, vocab, (1, length)), use_cache=True)
        for _ in range(DECODE_STEPS):
            out = model(torch.randint(0, vocab, (1, 1)), past_key_values=out.past_key_values, use_cache=True)

    print(f"{args.dtype}, torch {torch.__version__}, caches: {caps}")
    for _ in range(5):  # warm-up: the first passes allocate what every later one reuses
        run(32)
    print("| phase | passes | heap in use, MB | change, MB | seconds |\n|---|---|---|---|---|")
    for name, lengths in PHASES:
        before, start = heap_mb(), time.perf_counter()
        for length in lengths:
            run(length)
        seconds, after = time.perf_counter() - start, heap_mb()
        print(f"| {name} | {len(lengths) * (DECODE_STEPS + 1)} | {before:.1f} → {after:.1f} | {after - before:+.1f} | "
              f"{seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
