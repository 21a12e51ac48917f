"""`python -m app.tools.pair_memory`: resident memory of the app process with the real pair loaded and five
visitors using it.

Drives `app.session.SESSIONS` as the Models panel does: the embedded model first (the app's default),
then five browser sessions pick the offline Qwen2.5-Coder pair one after another and each runs a short
generation of its own code prompt (so none is a replay of another's) with the pair's recommended
settings (model events run one at a time in the app, so they do here). One copy of the pair must
serve all five: the script checks that every session got the same bundle object and prints the
resident set size (VmRSS) and its peak (VmHWM) after each step.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from app.session import SESSIONS
from core import generate
from core.config import preset
from core.models.pairs import QWEN_CODER_PAIR, available_presets
from examples import load_prompts

VISITORS = 5


def memory_mb() -> tuple[float, float]:
    """(resident, peak resident) of this process in MiB, from /proc/self/status."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8, help="new tokens per visitor's run (default 8)")
    args = parser.parse_args()
    found = next(found for pair, found in available_presets() if pair.label == QWEN_CODER_PAIR.label)
    if not found.available:
        raise SystemExit(f"the pair cannot load here: {found.reason}")
    rows = [("start (app imported)", *memory_mb(), 0.0)]
    started = time.perf_counter()
    SESSIONS.default_bundle()
    rows.append(("embedded SmolLM2 loaded", *memory_mb(), time.perf_counter() - started))
    config = preset(QWEN_CODER_PAIR.settings).with_(max_new_tokens=args.tokens)
    prompts = [p.text for p in load_prompts("code")]
    bundles = []
    for visitor in range(1, VISITORS + 1):
        session = f"visitor-{visitor}"
        started = time.perf_counter()
        bundle = SESSIONS.choose(session, QWEN_CODER_PAIR.verifier, QWEN_CODER_PAIR.drafter)
        rows.append((f"visitor {visitor} picks the pair", *memory_mb(), time.perf_counter() - started))
        started = time.perf_counter()
        trace = generate(SESSIONS.bundle(session), prompts[(visitor - 1) % len(prompts)], config)
        rows.append((f"visitor {visitor} ran {len(trace.tokens)} tokens", *memory_mb(),
                     time.perf_counter() - started))
        bundles.append(bundle)
    shared = all(b is bundles[0] for b in bundles)
    print("| step | resident MiB | peak MiB | seconds |\n|---|---|---|---|")
    for label, rss, peak, seconds in rows:
        print(f"| {label} | {rss:.0f} | {peak:.0f} | {seconds:.1f} |")
    print(f"\none copy of the pair for all {VISITORS} visitors: {shared} · pair dtype "
          f"{bundles[0].verifier.dtype} · memo {len(bundles[0].memo)} entries · load average "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())} · {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
