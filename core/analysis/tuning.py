"""Tuning thresholds for a fidelity target over a prompt set: the grid, its evaluation, the pick and the held-apart
check. `python -m core.tools.tune` (core/tools/tune.py) and the app's Compare tab both call these.

Over a grid of (tau_accept, tau_slim, gamma, signals, routes), every tuning prompt is decoded with the memo on
(`generate(..., replay=True)`: exactly the tokens of a real run; a threshold sweep only computes prefixes no earlier
run visited) and compared with the full model's own greedy output. Speed is the cost model's speed-up over plain
decoding (core.decoding.cost), pooled over prompts (tokens / cost units); fidelity is words differing or token
agreement, pooled too; the serving counters (core.analysis.metrics.AcceptanceCounts) are pooled by adding counts.
The recommendation is the fastest grid point that meets the target on the tuning prompts; classic SD (both
thresholds 1.0) is always in the grid and is exact under greedy, so a recommendation always exists. `held_apart`
then reports it on prompts it was not chosen on.

Expectations (a prompt's must / must-not words) are passed in by the caller, keyed by prompt text: this module
never reads examples/.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import reduce

import pandas as pd

from core.analysis.expectations import Expectations
from core.analysis.fidelity import attach_fidelity
from core.analysis.metrics import AcceptanceCounts, acceptance_counts, measured_speedup, summarize
from core.analysis.textdiff import word_diff
from core.analysis.tradeoffs import pareto_front
from core.config import DecodeConfig
from core.decoding.engine import generate
from core.errors import ConfigError
from core.models.loading import ModelBundle
from core.trace import Trace

Expected = Mapping[str, Expectations | None]
"""Expectations by prompt text (a prompt missing from it: nothing to check)."""

SPEED = "modelled_speedup"
"""The speed column tuned for: the cost model's speed-up over plain decoding."""


@dataclass(frozen=True)
class Target:
    """A fidelity target: a ceiling on words differing, or a floor on token agreement.

    `over_classic_sd`: the ceiling is classic SD's own words differing in the same grid plus `value`. In bf16 a
    k-token pass alone moves words against plain greedy (numerics), so an absolute ceiling can exclude classic SD
    itself; the issue's target is "words differing <= classic SD's + 1 point"."""

    metric: str  # "words_differing" or "agreement"
    value: float
    over_classic_sd: bool = False
    classic_sd: float | None = None  # classic SD's words differing, once resolved against a grid

    def resolved(self, grid: pd.DataFrame) -> Target:
        """The target with classic SD's words differing read from `grid` (its least, over γ and draft cuts)."""
        if not self.over_classic_sd:
            return self
        classic = grid[(grid["tau_accept"] >= 1.0) & (grid["tau_slim"] >= 1.0)]
        if classic.empty:
            raise ValueError("a target relative to classic SD needs classic SD (both thresholds 1.0) in the grid")
        return replace(self, classic_sd=float(classic["words_differing"].min()))

    @property
    def ceiling(self) -> float:
        return self.value + (self.classic_sd or 0.0) if self.over_classic_sd else self.value

    def met(self, row: dict | pd.Series) -> bool:
        got = row[self.metric]
        return got <= self.ceiling + 1e-12 if self.metric == "words_differing" else got >= self.value - 1e-12

    def describe(self) -> str:
        if self.over_classic_sd:
            sd = "classic SD's" if self.classic_sd is None else f"classic SD's {self.classic_sd:.3f}"
            return f"words differing <= {sd} + {self.value:g}"
        return (f"words differing <= {self.value:g}" if self.metric == "words_differing"
                else f"token agreement >= {self.value:g}")


@dataclass
class TuneResult:
    """What `tune` found: every grid point with its pooled metrics, the Pareto front and the pick."""

    target: Target
    grid: pd.DataFrame
    front: pd.DataFrame
    recommended: dict
    held_apart: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"target": asdict(self.target), "recommended": self.recommended, "held_apart": self.held_apart,
                "pareto_front": self.front.to_dict(orient="records"), "grid_points": len(self.grid)}


def grid_configs(base: DecodeConfig, taus: list[float], gammas: list[int], signals: list[str],
                 slim_routes: list[str], stops: list[float] | None = None,
                 slim_taus: list[float] | None = None) -> list[DecodeConfig]:
    """Every ordered pair tau_slim <= tau_accept (tau_accept from `taus`, tau_slim from `slim_taus`, default the same;
    1.0 always included: it switches a tier off) x gammas x signals x routes x draft cuts (`stops`: draft_stop_below
    values; default the base's)."""
    values = sorted({round(float(t), 4) for t in taus} | {1.0})
    slim_values = sorted({round(float(t), 4) for t in (taus if slim_taus is None else slim_taus)} | {1.0})
    out = []
    for gamma, signal, route, stop in itertools.product(gammas, signals, slim_routes,
                                                         stops or [base.draft_stop_below]):
        for a, s in itertools.product(values, slim_values):
            if s <= a or (slim_taus is not None and s == 1.0):  # given tau_slims: 1.0 (tier 2 off) with any
                out.append(base.with_(mode="via", tau_accept=a, tau_slim=s, gamma=gamma, draft_signal=signal,
                                      slim_signal=signal, slim_route=route, draft_stop_below=stop).validate())
    return out


def _reference(bundle: ModelBundle, prompt: str, base: DecodeConfig, profile: object = None) -> Trace:
    return generate(bundle, prompt, base.with_(mode="plain", temperature=0.0), profile=profile)


def evaluate(bundle: ModelBundle, prompts: list[str], config: DecodeConfig,
             references: dict[str, Trace], profile: object = None, expectations: Expected | None = None) -> dict:
    """Pooled metrics of one setting over prompts: speed-up (tokens / cost units, priced by `profile`: None is the
    modelled accelerator), words differing (pooled over reference words), token agreement (pooled over output
    tokens), identical share, expectations met (pooled over checks; None without any) and the serving counters
    (`serving`: AcceptanceCounts.to_dict, pooled by adding counts)."""
    tokens = cost = words = differing = agree_tokens = identical = met = checks = 0.0
    counts: list[AcceptanceCounts] = []
    for prompt in prompts:
        reference = references[prompt]
        trace = generate(bundle, prompt, config, profile=profile)
        attach_fidelity(bundle, trace, reference.token_ids, expectations=(expectations or {}).get(prompt))
        m = summarize(trace)
        counts.append(acceptance_counts(trace))
        n_words = max(len(reference.text.split()), 1)
        wd = m.get("words_differing")
        wd = word_diff(trace.text, reference.text).words_differing if wd is None else float(wd)
        tokens += m["tokens"]
        cost += m["modelled_cost"]
        words += n_words
        differing += wd * n_words
        agree_tokens += m["full_agreement"] * m["tokens"]
        identical += bool(m["identical_to_full"])
        met += m.get("expectations_met", 0)
        checks += m.get("expectations_total", 0)
    serving = reduce(lambda a, b: a + b, counts, AcceptanceCounts())
    return {SPEED: tokens / cost if cost else 0.0, "words_differing": differing / words if words else 0.0,
            "agreement": agree_tokens / tokens if tokens else 1.0, "identical_share": identical / len(prompts),
            "expectations_met": met / checks if checks else None, "tokens": int(tokens),
            "mean_acceptance_length": serving.mean_acceptance_length,
            "draft_acceptance_rate": serving.draft_acceptance_rate, "serving": serving.to_dict()}


def _setting(config: DecodeConfig) -> dict:
    return {"tau_accept": config.tau_accept, "tau_slim": config.tau_slim, "gamma": config.gamma,
            "draft_signal": config.draft_signal, "slim_signal": config.slim_signal, "drafter": config.drafter,
            "draft_route": config.draft_route, "slim_route": config.slim_route,
            "draft_stop_below": config.draft_stop_below}


def tune(bundle: ModelBundle, prompts: list[str], target: Target, configs: list[DecodeConfig],
         on_progress: Callable[[int, int], None] | None = None,
         should_stop: Callable[[], bool] | None = None, profile: object = None,
         expectations: Expected | None = None) -> TuneResult:
    """Evaluate every config on `prompts`, keep the Pareto front, recommend the fastest that meets `target`."""
    if not prompts:
        raise ConfigError("tune needs at least one prompt")
    references = {p: _reference(bundle, p, configs[0], profile) for p in prompts}
    rows = []
    for done, config in enumerate(configs):
        if should_stop is not None and should_stop():
            break
        rows.append({**_setting(config), **evaluate(bundle, prompts, config, references, profile, expectations)})
        if on_progress is not None:
            on_progress(done + 1, len(configs))
    grid = pd.DataFrame(rows)
    try:
        target = target.resolved(grid)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    grid["meets_target"] = [target.met(r) for _, r in grid.iterrows()]
    feasible = grid[grid["meets_target"]]
    if feasible.empty:  # only when stopped before classic SD ran, or under sampling
        raise ConfigError(f"no setting met {target.describe()} on the tuning prompts")
    fidelity_order = feasible[target.metric] * (1 if target.metric == "words_differing" else -1)
    best = feasible.assign(_f=fidelity_order).sort_values([SPEED, "_f"], ascending=[False, True]).iloc[0]
    recommended = {k: (v.item() if hasattr(v, "item") else v) for k, v in best.drop("_f").items()}
    return TuneResult(target=target, grid=grid, front=pareto_front(grid, target.metric, SPEED), recommended=recommended)


def config_of(base: DecodeConfig, setting: dict) -> DecodeConfig:
    keys = ("tau_accept", "tau_slim", "gamma", "draft_signal", "slim_signal", "drafter", "draft_route", "slim_route",
            "draft_stop_below")
    return base.with_(mode="via", **{k: setting[k] for k in keys}).validate()


def held_apart(bundle: ModelBundle, prompts: list[str], base: DecodeConfig, setting: dict, measure: bool,
               profile: object = None, expectations: Expected | None = None) -> dict:
    """The recommendation on prompts it was not tuned on (modelled speed; measured too with `measure`)."""
    config = config_of(base, setting)
    references = {p: _reference(bundle, p, base, profile) for p in prompts}
    out = {"prompts": len(prompts), **evaluate(bundle, prompts, config, references, profile, expectations)}
    if measure:
        ratios = []
        for prompt in prompts:  # plain and the recommendation back to back, both computed for real
            plain = generate(bundle, prompt, base.with_(mode="plain"), replay=False)
            ratios.append(measured_speedup(generate(bundle, prompt, config, replay=False), plain))
        ratios = sorted(r for r in ratios if r is not None)
        out["measured_speedup_median"] = ratios[len(ratios) // 2] if ratios else None
    return out
