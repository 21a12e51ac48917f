"""Side-by-side runs and threshold grids: the data behind comparison tables and trade-off charts.

Every run here goes through `generate` with the memo on, so a grid over thresholds only computes
the prefixes no earlier run has visited. Speed columns are therefore from the cost model; the
measured wall clock comes from `compare(..., replay=False)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd

from core.config import DecodeConfig
from core.engine import generate
from core.fidelity import attach_fidelity
from core.metrics import measured_speedup, summarize
from core.models import ModelBundle
from core.trace import Trace


def compare(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = False,
            should_stop: Callable[[], bool] | None = None,
            on_progress: Callable[[int, int], None] | None = None) -> dict[str, Trace]:
    """Plain, classic SD and VIA-SD on the same prompt, in one run, each with fidelity measured.

    With replay=False every pass runs for real, so the tokens/s columns are comparable. A stop
    request ends the current run early and skips the rest (their traces are then missing).
    """
    traces = {}
    for done, mode in enumerate(("plain", "sd", "via")):
        if should_stop is not None and should_stop():
            break
        traces[mode] = generate(bundle, prompt, config.with_(mode=mode), replay=replay, should_stop=should_stop)
        if on_progress is not None:
            on_progress(done + 1, 3)
    if should_stop is not None and should_stop():
        return traces  # stopped: no fidelity, which would need a full reference run
    reference = traces["plain"].token_ids if config.greedy else None
    for trace in traces.values():
        attach_fidelity(bundle, trace, reference)
    return traces


def comparison_table(traces: dict[str, Trace]) -> pd.DataFrame:
    """One row per mode with the headline metrics; speed-ups are over the plain run in `traces`."""
    rows = []
    for mode, trace in traces.items():
        m = summarize(trace)
        rows.append({
            "mode": mode,
            "tokens": m["tokens"],
            "tokens/s (measured)": m["tokens_per_s"],
            "speed-up (measured)": measured_speedup(trace, traces["plain"]) if "plain" in traces else None,
            "speed-up (modelled accelerator)": m["modelled_speedup"],
            "rejection rate": m["rejection_rate"],
            "mean accepted length": m["mean_accepted_length"],
            "full calls/token": m["full_calls_per_token"],
            "identical to full": m.get("identical_to_full"),
            "full-model agreement": m.get("full_agreement"),
            "full-model NLL": m.get("full_nll"),
        })
    return pd.DataFrame(rows)


def threshold_grid(bundle: ModelBundle, prompt: str, config: DecodeConfig, values: Iterable[float],
                   on_progress: Callable[[int, int], None] | None = None,
                   should_stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """VIA-SD over every ordered pair tau_slim <= tau_accept from `values`, with fidelity per pair."""
    values = sorted(set(round(v, 4) for v in values))
    pairs = [(a, s) for a in values for s in values if s <= a]
    reference = generate(bundle, prompt, config.with_(mode="plain", temperature=0.0)).token_ids
    rows = []
    for done, (tau_accept, tau_slim) in enumerate(pairs):
        if should_stop is not None and should_stop():
            break
        trace = generate(bundle, prompt, config.with_(mode="via", tau_accept=tau_accept, tau_slim=tau_slim))
        attach_fidelity(bundle, trace, reference)
        m = summarize(trace)
        rows.append({"tau_accept": tau_accept, "tau_slim": tau_slim, **{
            k: m[k] for k in ("modelled_speedup", "rejection_rate", "full_calls_per_token", "full_agreement",
                              "full_nll", "common_prefix", "identical_to_full", "tokens")}})
        if on_progress is not None:
            on_progress(done + 1, len(pairs))
    return pd.DataFrame(rows)
