"""The rows of `python -m core.tools.benchmark`: one run of one prompt by one method, run interleaved prompt by prompt.

Hugging Face's anchors are timed by core.analysis.hf_baselines.hf_generate (the one timed `generate`), ours by
the engine with every pass run for real (no memo). Fidelity is measured against our plain greedy output (the
full model's, same dtype): words differing and the prompt's expectations.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from core.analysis.fidelity import attach_fidelity
from core.analysis.hf_baselines import hf_generate, reader_fidelity
from core.analysis.metrics import summarize
from core.config import LOOKUP_PRESET, DecodeConfig
from core.decoding.cost import CostModel
from core.decoding.engine import generate
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt
from core.trace import Trace

HF_GREEDY, HF_LOOKUP, HF_ASSISTED = "HF greedy", "HF lookup", "HF assisted"
SAME_DRAFTS = "SD same drafts"  # classic SD with VIA-SD's own drafter settings: VIA-SD's lossless equivalent
LLAMA = "llama.cpp"  # llama-cpp-python on the model's GGUF (core/tools/llama_anchor.py), in both tables
ROW_ORDER = (HF_GREEDY, LLAMA, "plain", HF_LOOKUP, HF_ASSISTED, "SD", SAME_DRAFTS, "VIA-SD")


def lookup_config(args: argparse.Namespace) -> DecodeConfig:
    """VIA-SD with prompt lookup: core.config.LOOKUP_PRESET, with any setting given on the command line."""
    via = LOOKUP_PRESET.given(args, "tau_accept", "tau_slim", "copy_evidence", "audit_span", "draft_stop_below",
                              "ngram_size")
    gamma = via.gamma if args.lookup_gamma is None else args.lookup_gamma
    return via.with_(max_new_tokens=args.max_new_tokens, gamma=gamma).validate()


@dataclass
class Row:
    """One run of one prompt by one method."""

    prompt: str
    method: str  # HF greedy | HF lookup | HF assisted | plain | SD | VIA-SD
    drafter: str  # "-" for greedy/plain
    token_ids: list[int]
    seconds: float
    trace: Trace | None = None
    predicted: float | None = None
    accelerator: float | None = None
    words_differing: float | None = None
    expectations: tuple[int, int] | None = None  # (met, total)
    kept_full_expectations: bool | None = None  # met every expectation the full model's own output meets
    ratios: dict[str, float] = field(default_factory=dict)
    answer: bool | None = None  # math prompts: the final answer is right

    @property
    def tokens_per_s(self) -> float:
        return len(self.token_ids) / self.seconds if self.seconds > 0 else 0.0

    @property
    def rejection_rate(self) -> float | None:
        """core.analysis.metrics' rejection rate (None: no trace, e.g. Hugging Face's runs)."""
        return None if self.trace is None else float(summarize(self.trace)["rejection_rate"])

    @property
    def acceptance_length(self) -> float | None:
        """core.analysis.metrics' mean acceptance length (vLLM's: 1 + accepted / drafting rounds)."""
        return None if self.trace is None else float(summarize(self.trace)["mean_acceptance_length"])

    @property
    def key(self) -> str:
        return self.method if self.drafter == "-" else f"{self.method} {self.drafter}"


def _our_row(bundle: ModelBundle, prompt: object, label: str, config: DecodeConfig, costs: CostModel,
             accelerator: CostModel) -> Row:
    trace = generate(bundle, prompt.text, config, replay=False, profile=costs.profile)  # priced once, by `costs`
    drafter = bundle.drafter.model if config.drafter == "model" and bundle.drafter is not None else None
    method = {"plain": "plain", "sd": "SD", "via": "VIA-SD"}[config.mode]
    if config.mode == "sd" and config.drafter == "ngram" and config.draft_stop_below > 0:
        method = SAME_DRAFTS
    return Row(label, method, "-" if config.mode == "plain" else config.drafter, trace.token_ids, trace.wall_s, trace,
               predicted=costs.predicted_speedup(trace, drafter),
               accelerator=accelerator.predicted_speedup(trace, drafter))


def run_prompt(bundle: ModelBundle, prompt: object, label: str, args: argparse.Namespace, costs: CostModel,
               accelerator: CostModel, flip: bool, anchor: object | None = None) -> list[Row]:
    """Every method on one prompt, interleaved; then fidelity against our plain (greedy) output.
    `anchor` (core.tools.llama_anchor.LlamaAnchor) adds llama.cpp's greedy row on the same prompt ids."""
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt.text)
    base = DecodeConfig(max_new_tokens=args.max_new_tokens)
    base = base.given(args, "tau_accept", "tau_slim")
    jobs = [lambda: Row(label, HF_GREEDY, "-", *hf_generate(bundle, prompt_ids, args.max_new_tokens)),
            lambda: _our_row(bundle, prompt, label, base.with_(mode="plain"), costs, accelerator)]
    if anchor is not None:
        jobs.append(lambda: Row(label, LLAMA, "-", *anchor.decode(prompt_ids, args.max_new_tokens)))
    for drafter in args.drafters:
        gamma = args.lookup_tokens if drafter == "ngram" else args.gamma
        if drafter == "ngram":
            jobs.append(lambda: Row(label, HF_LOOKUP, "ngram", *hf_generate(
                bundle, prompt_ids, args.max_new_tokens, prompt_lookup_num_tokens=args.lookup_tokens)))
        if drafter == "model":
            jobs.append(lambda: Row(label, HF_ASSISTED, "model", *hf_generate(
                bundle, prompt_ids, args.max_new_tokens, assistant_model=bundle.drafter.model)))
        configs = [base.with_(mode=mode, drafter=drafter, gamma=gamma) for mode in ("sd", "via")]
        if drafter == "ngram":  # VIA-SD as recommended, and classic SD with the very same drafts (its lossless twin)
            via = lookup_config(args)
            configs = [configs[0], via.with_(mode="sd"), via]
        for config in configs:
            jobs.append(lambda config=config: _our_row(bundle, prompt, label, config, costs, accelerator))
    runs: list[Row] = []
    for repeat in range(args.repeats):  # alternate the order; keep each method's median-time run
        runs.extend(job() for job in (reversed(jobs) if (flip + repeat) % 2 else jobs))
    rows = []
    for key in dict.fromkeys(r.key for r in runs):
        same = sorted((r for r in runs if r.key == key), key=lambda r: r.seconds)
        rows.append(same[(len(same) - 1) // 2])
    rows.sort(key=lambda r: (0 if r.drafter == "-" else 1 + args.drafters.index(r.drafter), ROW_ORDER.index(r.method)))
    plain = next(r for r in rows if r.method == "plain")
    expectations = getattr(prompt, "expectations", None)
    for row in rows:
        if row.trace is not None:
            attach_fidelity(bundle, row.trace, plain.token_ids, expectations=expectations)
            m = summarize(row.trace)
            row.words_differing = m.get("words_differing", 0.0 if m.get("identical_to_full") else None)
            if m.get("expectations_total"):
                row.expectations = (int(m["expectations_met"]), int(m["expectations_total"]))
                checks = getattr(row.trace.fidelity, "expectations", None) or []
                row.kept_full_expectations = all(getattr(c, "met", False) or not getattr(c, "full_met", False)
                                                 for c in checks)
        else:
            found = reader_fidelity(bundle, row.token_ids, plain.token_ids, expectations)
            row.words_differing, row.expectations = found["words_differing"], found["expectations"]
            row.kept_full_expectations = found["kept"]
    anchors = {name: next((r for r in rows if r.method == name), None) for name in (HF_GREEDY, HF_LOOKUP)}
    for row in rows:
        for name, anchor in list(anchors.items()) + [("plain", plain)]:
            if anchor is not None and anchor.tokens_per_s:
                row.ratios[name] = row.tokens_per_s / anchor.tokens_per_s
    return rows


