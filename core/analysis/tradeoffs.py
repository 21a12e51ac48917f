"""Side-by-side runs, threshold grids and scheme fronts: the data behind comparison tables and trade-off charts.

Every run here goes through `generate` with the memo on, so a grid over thresholds only computes
the prefixes no earlier run has visited. Speed columns are therefore from the cost model; the
measured wall clock comes from `compare(..., replay=False)`.

`sweep_schemes` runs VIA-SD (threshold pairs), BiLD (fallback x rollback) and the three
Speculative Cascades (alpha) on the same prompts, drafter and cost profile, and `pareto_fronts`
keeps each scheme's non-dominated settings of (modelled speed-up, words differing from the full
model's own greedy output). `python -m core.tools.scheme_fronts --family summarisation` prints, per family,
which scheme is fastest within each words-differing budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pandas as pd

from core.analysis.expectations import Expectations
from core.analysis.fidelity import attach_fidelity, separate_numerics
from core.analysis.metrics import summarize
from core.config import DecodeConfig
from core.decoding.cost_profiles import CostProfile
from core.decoding.engine import generate
from core.errors import ConfigError
from core.models.loading import ModelBundle
from core.round_policy import in_order
from core.trace import Trace
from core.vocabulary import exact_alpha


def compare(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = False,
            should_stop: Callable[[], bool] | None = None,
            on_progress: Callable[[int, int], None] | None = None,
            profile: CostProfile | str | None = None, expectations: Expectations | None = None) -> dict[str, Trace]:
    """Plain, classic SD and VIA-SD on the same prompt, in one run, each with fidelity measured (and the
    task's `expectations` checked, when given).

    With replay=False every pass runs for real, so the tokens/s columns are comparable. A stop
    request ends the current run early and skips the rest (their traces are then missing).
    """
    traces = {}
    for done, mode in enumerate(("plain", "sd", "via")):
        if should_stop is not None and should_stop():
            break
        traces[mode] = generate(bundle, prompt, config.with_(mode=mode), replay=replay, should_stop=should_stop,
                                profile=profile)
        if on_progress is not None:
            on_progress(done + 1, 3)
    if should_stop is not None and should_stop():
        return traces  # stopped: no fidelity, which would need a full reference run
    reference = traces["plain"].token_ids if config.greedy else None
    for trace in traces.values():
        attach_fidelity(bundle, trace, reference, expectations=expectations)
    separate_numerics(traces)
    return traces


def threshold_grid(bundle: ModelBundle, prompt: str, config: DecodeConfig, values: Iterable[float],
                   on_progress: Callable[[int, int], None] | None = None,
                   should_stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """VIA-SD over every pair from `values` the settings accept (tau_slim <= tau_accept, or tier 2 off with any
    tau_accept: core.round_policy.in_order), with fidelity per pair."""
    values = sorted(set(round(v, 4) for v in values))
    pairs = [(a, s) for a in values for s in values if in_order(a, s)]
    reference = generate(bundle, prompt, config.with_(mode="plain", temperature=0.0)).token_ids
    rows = []
    for done, (tau_accept, tau_slim) in enumerate(pairs):
        if should_stop is not None and should_stop():
            break
        trace = generate(bundle, prompt, config.with_(mode="via", tau_accept=tau_accept, tau_slim=tau_slim))
        attach_fidelity(bundle, trace, reference)
        m = summarize(trace)
        rows.append({"tau_accept": tau_accept, "tau_slim": tau_slim, "words_differing": difference_of(m)[0], **{
            k: m[k] for k in ("modelled_speedup", "rejection_rate", "full_calls_per_token", "full_agreement",
                              "full_nll", "common_prefix", "identical_to_full", "tokens")}})
        if on_progress is not None:
            on_progress(done + 1, len(pairs))
    return pd.DataFrame(rows)


# --- Scheme fronts: VIA-SD beside the lossy baselines --------------------------------------------

# Grids sized for a shared 2-core CPU (about 20 distinct runs per prompt; the memo replays repeats).
VIA_THRESHOLDS = (1.0, 0.8, 0.5)
BILD_FALLBACKS = (0.0, 0.6)
BILD_ROLLBACKS = (0.0, 1.0, 3.0)
CASCADE_ALPHAS = {  # each sweep also runs the rule's exact setting (core.decoding.policies.exact_alpha) first
    "cascade-chow": (0.0, 0.3, 1.0),
    "cascade-diff": (-0.2, 0.0, 0.2),
    "cascade-opt": (-0.5, 0.0, 0.5),
}
SCHEMES = {
    "via-sd": "VIA-SD: tau_accept x tau_slim (exact rule)",
    "bild": "BiLD: fallback (draft_stop_below) x rollback (verify_alpha, nats)",
    "cascade-chow": "Speculative Cascade, Chow deferral (verify_alpha)",
    "cascade-diff": "Speculative Cascade, Diff deferral (verify_alpha)",
    "cascade-opt": "Speculative Cascade, OPT deferral (verify_alpha)",
}
BUDGETS = (0.0, 0.01, 0.02, 0.05, 0.10, 0.20, 0.50)


def scheme_settings(scheme: str) -> list[dict[str, object]]:
    """The DecodeConfig changes one scheme's sweep runs; the first is its exact setting (classic SD)."""
    if scheme == "via-sd":
        return [{"mode": "via", "tau_accept": a, "tau_slim": s}
                for a in VIA_THRESHOLDS for s in VIA_THRESHOLDS if s <= a]
    if scheme == "bild":
        return [{"mode": "sd", "verify_rule": "bild", "draft_stop_below": f, "verify_alpha": r}
                for f in BILD_FALLBACKS for r in BILD_ROLLBACKS]
    if scheme in CASCADE_ALPHAS:
        alphas = (exact_alpha(scheme), *CASCADE_ALPHAS[scheme])
        return [{"mode": "sd", "verify_rule": scheme, "verify_alpha": a} for a in alphas]
    raise ConfigError(f"scheme must be one of {', '.join(SCHEMES)}, not '{scheme}'")


def exact_label(scheme: str) -> str:
    """The label of a scheme's exact setting (the first it runs): classic SD, whatever the scheme."""
    return setting_label(scheme_settings(scheme)[0])


def setting_label(setting: dict[str, object]) -> str:
    """A short name for a setting, e.g. 'τa=0.9 τs=0.5', 'fb=0.5 rb=2', 'α=-0.1'."""
    if setting.get("mode") == "via":
        return f"τa={setting['tau_accept']:g} τs={setting['tau_slim']:g}"
    if setting.get("verify_rule") == "bild":
        return f"fb={setting['draft_stop_below']:g} rb={setting['verify_alpha']:g}"
    return f"α={setting['verify_alpha']:g}"


def difference_of(metrics: dict) -> tuple[float, str]:
    """(share of the output differing from the full model's own output, which measure gave it).

    Words differing (core.analysis.textdiff) when fidelity measured it; until then 1 - the share of output
    tokens that are the full model's argmax given the output so far (`full_agreement`)."""
    value = metrics.get("words_differing")
    if value is not None:
        return float(value), "words differing"
    return 1.0 - float(metrics["full_agreement"]), "1 - token agreement"


def sweep_schemes(bundle: ModelBundle, prompts: Sequence[str], base: DecodeConfig,
                  schemes: Iterable[str] = tuple(SCHEMES), *,
                  on_progress: Callable[[int, int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """Every scheme's settings on every prompt, greedy, memo on: one row per (scheme, setting, prompt).

    All schemes share `base`'s drafter, gamma, routes and the cost model, so their speed-ups are
    comparable; each is measured against the full model's own greedy output of the same length.
    """
    base = base.with_(temperature=0.0)
    jobs = [(scheme, setting) for scheme in schemes for setting in scheme_settings(scheme)]
    for _, setting in jobs:
        base.with_(**setting).validate()  # a bad grid fails before any model runs
    rows, done, total = [], 0, len(jobs) * len(prompts)
    for index, prompt in enumerate(prompts):  # prompt-major: consecutive runs share the memo's prefixes
        reference = generate(bundle, prompt, base.with_(mode="plain")).token_ids
        for scheme, setting in jobs:
            if should_stop is not None and should_stop():
                return pd.DataFrame(rows)
            trace = generate(bundle, prompt, base.with_(**setting))
            attach_fidelity(bundle, trace, reference)
            m = summarize(trace)
            differing, measure = difference_of(m)
            rows.append({"scheme": scheme, "setting": setting_label(setting), "prompt": index,
                         "modelled_speedup": m["modelled_speedup"], "words_differing": differing,
                         "difference_measure": measure, "identical_to_full": m["identical_to_full"],
                         "rejection_rate": m["rejection_rate"], "tokens": m["tokens"]})
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    return pd.DataFrame(rows)


def scheme_points(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (scheme, setting): mean modelled speed-up and mean words differing over the prompts."""
    grouped = rows.groupby(["scheme", "setting"], sort=False)
    points = grouped.agg(modelled_speedup=("modelled_speedup", "mean"), words_differing=("words_differing", "mean"),
                         difference_measure=("difference_measure", "first"),
                         identical_share=("identical_to_full", "mean"), prompts=("prompt", "nunique"))
    return points.reset_index()


def pareto_front(points: pd.DataFrame, fidelity: str = "words_differing",
                 speed: str = "modelled_speedup") -> pd.DataFrame:
    """The points no other point beats on both speed and fidelity (at least as fast and as faithful, better at
    one), from the most faithful (slowest) to the fastest. `fidelity` "words_differing" (lower is better) or a
    share where higher is better ("agreement"). The one Pareto front: sweeps and core.tools.tune both use it."""
    sign = 1.0 if fidelity == "words_differing" else -1.0  # as a cost: lower is better
    cost, fast = sign * points[fidelity].to_numpy(float), points[speed].to_numpy(float)
    keep = [not any(fast[j] >= fast[i] and cost[j] <= cost[i] and (fast[j] > fast[i] or cost[j] < cost[i])
                    for j in range(len(points)) if j != i) for i in range(len(points))]
    return points[keep].sort_values([speed, fidelity], ascending=[True, sign < 0]).reset_index(drop=True)


def pareto_fronts(points: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each scheme's own Pareto front."""
    return {scheme: pareto_front(group) for scheme, group in points.groupby("scheme", sort=False)}


def dominance_table(points: pd.DataFrame, budgets: Sequence[float] = BUDGETS) -> pd.DataFrame:
    """Per words-differing budget: each scheme's best mean speed-up within it, and which scheme is fastest."""
    rows = []
    for budget in budgets:
        row: dict[str, object] = {"differing <=": budget}
        best_value, best_schemes = None, []
        for scheme, group in points.groupby("scheme", sort=False):
            inside = group[group["words_differing"] <= budget + 1e-9]
            value = float(inside["modelled_speedup"].max()) if not inside.empty else None
            row[scheme] = value
            if value is None:
                continue
            if best_value is None or value > best_value + 1e-9:
                best_value, best_schemes = value, [scheme]
            elif abs(value - best_value) <= 1e-9:
                best_schemes.append(scheme)
        row["fastest"] = ", ".join(best_schemes) if best_schemes else "-"
        rows.append(row)
    return pd.DataFrame(rows)
