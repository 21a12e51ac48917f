"""`python -m core.tools.benchmark --pair qwen2.5-coder`: the paper's table on a real drafter / verifier pair.

Per prompt (code prompts with must / must-not expectations, math prompts with a final answer), every method
once, interleaved (the order flips on every other prompt, so a shared machine's drift favours no side):
Hugging Face greedy, assisted generation with its own defaults and with a fixed draft length, prompt lookup;
our plain, classic SD, VIA-SD (`core.config.preset("qwen2.5-coder")`), BiLD and one speculative cascade (the
lossy baselines of core.decoding.policies), and any leads asked for (`--leads`); with `--drafter-quants`, the
drafter-dependent rows again for each other drafter setting ("HF assisted [int8]", "SD [int8]", "VIA-SD [int8]":
HF assisted is handed the same drafter object); where llama-cpp-python imports, llama.cpp greedy on the
verifier's GGUF, fed the same prompt ids (core/tools/llama_anchor.py). Fidelity is read against our
plain output, the same-dtype greedy one (in bf16 a k-token pass rounds differently from one at a time, so even
classic SD differs from it a little: that is the floor the tiers are compared with). The printed report is
core/tools/pair_report.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, replace

from core.analysis.drafting_pays import fit_to_machine
from core.analysis.hf_baselines import hf_assisted, hf_generate, reader_fidelity
from core.config import DRAFTERS, DecodeConfig, preset
from core.decoding.cost import CostModel
from core.decoding.engine import generate
from core.models.catalog import QWEN_CODER_05B_ID, QWEN_CODER_15B_ID
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt
from core.tools.bench_rows import Row
from core.tools.llama_anchor import LLAMA, LlamaAnchor, LlamaCall

PAIRS: dict[str, tuple[str, str]] = {"qwen2.5-coder": (QWEN_CODER_15B_ID, QWEN_CODER_05B_ID)}
"""--pair NAME -> (verifier, drafter): the offline pair; its recommended setting is preset(NAME)."""

SEARCHED_SLIM, SEARCHED_TAU = "layers:0-5,7-11,15-27;no-mlp:7,23,25", 0.575
"""The pair's searched slim verifier: layers 6 and 12-14 skipped whole and the MLP of 7, 23 and 25 (25 % of the
layers' work), with the tau_slim fitted on calibration text, the best held-apart net saving of the full search
(`python -m core.tools.calibrate --pair qwen2.5-coder`, README); the same route as core/presets/qwen2.5-coder-1.5b.json
("calibrated-slim"), spelled out so the table does not depend on the file."""

CHEAPER_SLIM, CHEAPER_TAU = "layers:0-4,6,9-11,17-22,24,26-27", 0.689
"""A cheaper slim verifier from the same search: the 35 % budget's best mask (layers 5, 7-8, 12-16, 23 and 25
skipped whole; modelled cost 0.70 of a full pass against the shipped mask's 0.80) with its fitted tau_slim."""

HF_GREEDY, HF_ASSISTED, HF_ASSISTED_FIXED, HF_LOOKUP = "HF greedy", "HF assisted", "HF assisted γ", "HF lookup"
PLAIN, SD, VIA, BILD, CASCADE = "plain", "SD", "VIA-SD", "BiLD", "cascade"
BASELINES = (HF_GREEDY, HF_ASSISTED, HF_ASSISTED_FIXED, HF_LOOKUP, PLAIN, SD, VIA, BILD, CASCADE)


@dataclass(frozen=True)
class HfCall:
    """A Hugging Face anchor: greedy, assisted (gamma None: its defaults) or prompt lookup."""

    kind: str  # "greedy" | "assisted" | "lookup"
    max_new_tokens: int
    gamma: int | None = None  # assisted: draft tokens per round (None: HF's defaults); lookup: tokens copied

    def with_(self, **changes: object) -> HfCall:
        """A copy with `changes`, as DecodeConfig.with_ (so a WithDrafter wraps either kind)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class WithDrafter:
    """A method run with another drafter setting than the bundle's (core.models.drafter_quant), same verifier."""

    method: HfCall | DecodeConfig
    quant: str

    def with_(self, **changes: object) -> WithDrafter:
        return WithDrafter(self.method.with_(**changes), self.quant)


Method = HfCall | DecodeConfig | WithDrafter | LlamaCall


def drafter_rows(table: dict[str, Method], quants: list[str]) -> dict[str, Method]:
    """The drafter-dependent rows (HF assisted, classic SD, VIA-SD) again for each drafter setting in `quants`."""
    out = {}
    for quant in quants:
        for name in (HF_ASSISTED, SD, VIA):
            if name in table:
                out[f"{name} [{quant}]"] = WithDrafter(table[name], quant)
    return out


def via_config(args: argparse.Namespace, name: str) -> DecodeConfig:
    """The recommended VIA-SD setting of the pair (core.config.preset), with any setting given on the command line."""
    base = preset(name).given(args, "tau_accept", "tau_slim", "slim_route", "copy_evidence", "audit_span")
    if args.via_gamma is not None:
        base = base.with_(gamma=args.via_gamma)
    return base.with_(max_new_tokens=args.max_new_tokens).validate()


def fit_pair(args: argparse.Namespace, bundle: ModelBundle) -> str:
    """With no draft length given, classic SD and VIA-SD run at the draft length fitted to this machine's measured
    passes (core.analysis.drafting_pays, as `python -m core --preset` does); the line saying what was chosen."""
    if not getattr(args, "fit", False):
        return f"draft length {args.gamma} (classic SD), {args.via_gamma or preset(args.pair).gamma} (VIA-SD), as given"
    fitted = fit_to_machine(bundle, via_config(args, args.pair))
    args.gamma = args.via_gamma = fitted.gamma
    return f"fitted to this machine: {fitted.note}" + (" (SD and VIA-SD still run, to compare)"
                                                      if fitted.config.mode == "plain" else "")


def lead_configs(via: DecodeConfig, gamma: int) -> dict[str, DecodeConfig]:
    """The leads the README tried, each a variation of the recommended setting (README says what each did).

    * "VIA-SD audited": tier-1/2 tokens of the model drafter kept provisionally and audited by the next full
      pass (copy_evidence "audit", exact in greedy);
    * "VIA-SD no slim": tier 2 off (is the slim verifier paying?);
    * "VIA-SD ranked": the slim verifier skipping the 6 layers block influence ranks lowest (auto-slim);
    * "VIA-SD searched slim" / "VIA-SD cheaper slim": tier 2 on with the shipped searched mask (25 % of the layers'
      work skipped) or the 35 % budget's best mask, each with its fitted tau_slim;
    * "VIA-SD long": gamma 12, the model's draft cut at its first token under 0.5 (BiLD's fallback);
    * "VIA-SD tau 0.8" / "0.7" / "0.5": a lower tau_accept (with the audit still exact in greedy);
    * "VIA-SD hybrid" (and "long"): the drafter copies from the prompt when it matches, else asks the 0.5B model,
      audited."""
    leads = {"VIA-SD audited": via.with_(copy_evidence="audit"), "VIA-SD no slim": via.with_(tau_slim=1.0),
             "VIA-SD ranked": via.with_(slim_route="auto-slim"), "SD γ=via": via.with_(mode="sd"),
             "VIA-SD searched slim": via.with_(slim_route=SEARCHED_SLIM, tau_slim=SEARCHED_TAU),
             "VIA-SD cheaper slim": via.with_(slim_route=CHEAPER_SLIM, tau_slim=CHEAPER_TAU)}
    leads["VIA-SD long"] = via.with_(gamma=12, draft_stop_below=0.5)  # run ahead while sure, hand over when not
    for tau in (0.8, 0.7, 0.5):  # more rounds skip their verifier pass; the audit still checks every kept token
        leads[f"VIA-SD tau {tau}"] = via.with_(tau_accept=tau)
    if "hybrid" in DRAFTERS:
        leads["VIA-SD hybrid"] = via.with_(drafter="hybrid", copy_evidence="audit")
        leads["VIA-SD hybrid long"] = via.with_(drafter="hybrid", copy_evidence="audit", gamma=12, draft_stop_below=0.5)
        leads["SD hybrid"] = via.with_(drafter="hybrid", mode="sd", gamma=gamma)
    return leads


def methods(args: argparse.Namespace, pair: str, anchor: LlamaAnchor | None = None) -> dict[str, Method]:
    """Every method of the table by row label, in printing order (llama.cpp after HF greedy, given an anchor)."""
    n = args.max_new_tokens
    sd = DecodeConfig(mode="sd", drafter="model", gamma=args.gamma, max_new_tokens=n)
    via = via_config(args, pair)
    table: dict[str, Method] = {
        HF_GREEDY: HfCall("greedy", n), **({LLAMA: LlamaCall(n, anchor)} if anchor is not None else {}),
        HF_ASSISTED: HfCall("assisted", n),
        HF_ASSISTED_FIXED: HfCall("assisted", n, args.gamma), HF_LOOKUP: HfCall("lookup", n, args.lookup_tokens),
        PLAIN: DecodeConfig(mode="plain", max_new_tokens=n), SD: sd, VIA: via,
        BILD: sd.with_(verify_rule="bild", verify_alpha=args.bild_rollback, draft_stop_below=args.bild_fallback),
        CASCADE: sd.with_(verify_rule="cascade-chow", verify_alpha=args.cascade_alpha),
    }
    leads = lead_configs(via, args.gamma)
    for name in args.leads:
        if name not in leads:
            raise SystemExit(f"unknown lead '{name}': choose from {', '.join(leads)}")
        table[name] = leads[name]
    table.update(drafter_rows(table, getattr(args, "drafter_quants", [])))
    return {name: m for name, m in table.items() if name not in args.skip}


def run_method(bundle: ModelBundle, prompt: object, prompt_ids: list[int], label: str, name: str, method: Method,
               costs: CostModel, variants: dict[str, ModelBundle] | None = None) -> Row:
    """One timed run of one method on one prompt (`variants`: the bundle with each other drafter setting)."""
    if isinstance(method, WithDrafter):
        bundle, method = (variants or {})[method.quant], method.method
    if isinstance(method, LlamaCall):
        return Row(label, name, "-", *method.run(prompt_ids))
    if isinstance(method, HfCall):
        new = method.max_new_tokens
        if method.kind == "greedy":
            ids, seconds = hf_generate(bundle, prompt_ids, new)
        elif method.kind == "assisted":
            ids, seconds = hf_assisted(bundle, prompt_ids, new, method.gamma)
        else:
            ids, seconds = hf_generate(bundle, prompt_ids, new, prompt_lookup_num_tokens=method.gamma)
        return Row(label, name, "-", ids, seconds)
    trace = generate(bundle, prompt.text, method, replay=False, profile=costs.profile)  # priced once, by `costs`
    drafter = bundle.drafter.model if bundle.drafter is not None and method.drafter in ("model", "hybrid") else None
    predicted = costs.predicted_speedup(trace, drafter) if method.mode != "plain" else 1.0
    return Row(label, name, "-", trace.token_ids, trace.wall_s, trace, predicted=predicted)


def run_pair_prompt(bundle: ModelBundle, prompt: object, label: str, table: dict[str, Method], costs: CostModel,
                    flip: bool, repeats: int = 1, variants: dict[str, ModelBundle] | None = None) -> list[Row]:
    """Every method on one prompt, interleaved (reversed when `flip`); the median-time run of each is kept; then
    fidelity against our plain output (words differing, expectations kept, the final answer)."""
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt.text)
    jobs: list[Callable[[], Row]] = [lambda name=name, m=m: run_method(bundle, prompt, prompt_ids, label, name, m,
                                                                       costs, variants) for name, m in table.items()]
    runs: list[Row] = []
    for repeat in range(repeats):
        runs.extend(job() for job in (reversed(jobs) if (flip + repeat) % 2 else jobs))
    rows = []
    for name in table:
        same = sorted((r for r in runs if r.method == name), key=lambda r: r.seconds)
        rows.append(same[(len(same) - 1) // 2])
    plain = next(r for r in rows if r.method == PLAIN)
    for row in rows:
        found = reader_fidelity(bundle, row.token_ids, plain.token_ids, getattr(prompt, "expectations", None))
        row.words_differing, row.expectations = found["words_differing"], found["expectations"]
        row.kept_full_expectations, row.answer = found["kept"], found["answer"]
        if plain.tokens_per_s:
            row.ratios[PLAIN] = row.tokens_per_s / plain.tokens_per_s
    greedy = next((r for r in rows if r.method == HF_GREEDY), None)
    for row in rows:
        if greedy is not None and greedy.tokens_per_s:
            row.ratios[HF_GREEDY] = row.tokens_per_s / greedy.tokens_per_s
    return rows
