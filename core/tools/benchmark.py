"""`python -m core.benchmark`: our decoders against Hugging Face's own, side by side, as one printed table.

For every prompt, on the same model, device and prompt ids, interleaved (the order flips on every
other prompt so drift in a shared machine's load does not favour one side):
* anchors: Hugging Face `generate` greedy, `generate(prompt_lookup_num_tokens=N)` and, when a
  separate drafter is loaded (`--drafter-model`), `generate(assistant_model=...)`;
* ours, every pass run for real (no memo): plain, classic SD and VIA-SD with each drafter.
Columns: tokens/s; ratios to HF greedy and to HF prompt lookup; the measured speed-up over our
plain decoding beside the speed-up a cost profile predicts from the run's calls (`pred.`, this
machine's profile by default) and the modelled accelerator's (`accel.`); words differing from the
full model's own greedy output and expectations met (grounded prompts carry them); identical
tokens. Below: medians per method, the targets of issue 7, and how well the profile predicted.
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import dataclass, field

import torch

from core.analysis.fidelity import attach_fidelity
from core.analysis.metrics import summarize
from core.config import LOOKUP_PRESET, DecodeConfig
from core.decoding.cost import CostModel
from core.decoding.cost_profiles import device_profile
from core.decoding.engine import generate
from core.decoding.timing import Stopwatch
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle
from core.models.prompting import encode_prompt, stop_token_ids
from core.tools.profile import machine_description, measure_profile, versions
from core.trace import Trace

HF_GREEDY, HF_LOOKUP, HF_ASSISTED = "HF greedy", "HF lookup", "HF assisted"
SAME_DRAFTS = "SD same drafts"  # classic SD with VIA-SD's own drafter settings: VIA-SD's lossless equivalent


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

    @property
    def tokens_per_s(self) -> float:
        return len(self.token_ids) / self.seconds if self.seconds > 0 else 0.0

    @property
    def key(self) -> str:
        return self.method if self.drafter == "-" else f"{self.method} {self.drafter}"


def hf_generate(bundle: ModelBundle, prompt_ids: list[int], max_new_tokens: int,
                **kwargs: object) -> tuple[list[int], float]:
    """Hugging Face `generate`, greedy, timed like ours (CUDA synchronised); returns (new ids, seconds)."""
    model = bundle.verifier.model
    ids = torch.tensor([prompt_ids], device=bundle.verifier.device)
    stop = sorted(stop_token_ids(model, bundle.verifier.tokenizer))
    with torch.inference_mode(), Stopwatch(bundle.verifier.device) as watch:
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, temperature=None, top_p=None, top_k=None, eos_token_id=stop,
                             pad_token_id=stop[0], **kwargs)
    return out[0, len(prompt_ids):].tolist(), watch.seconds


def reader_fidelity(bundle: ModelBundle, ids: list[int], reference: list[int], expectations: object) -> dict:
    """Words differing and expectations met for an output we have no trace of (the HF anchors).

    Uses core.analysis.textdiff / core.analysis.expectations where they exist (they land with the grounded family)."""
    out: dict = {}
    tokenizer = bundle.verifier.tokenizer
    text, ref = tokenizer.decode(ids, skip_special_tokens=True), tokenizer.decode(reference, skip_special_tokens=True)
    try:
        from core.analysis.textdiff import word_diff
    except ImportError:
        out["words_differing"] = 0.0 if ids == reference else None
    else:
        out["words_differing"] = word_diff(text, ref, getattr(tokenizer, "all_special_tokens", ())).words_differing
    if expectations is not None and hasattr(expectations, "check"):
        checks, on_reference = expectations.check(text), expectations.check(ref)
        out["expectations"] = (sum(bool(c.met) for c in checks), len(checks))
        out["kept"] = all(c.met or not r.met for c, r in zip(checks, on_reference, strict=True))
    return out


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
               accelerator: CostModel, flip: bool) -> list[Row]:
    """Every method on one prompt, interleaved; then fidelity against our plain (greedy) output."""
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt.text)
    base = DecodeConfig(max_new_tokens=args.max_new_tokens)
    base = base.given(args, "tau_accept", "tau_slim")
    jobs = [lambda: Row(label, HF_GREEDY, "-", *hf_generate(bundle, prompt_ids, args.max_new_tokens)),
            lambda: _our_row(bundle, prompt, label, base.with_(mode="plain"), costs, accelerator)]
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
            attach_fidelity(bundle, row.trace, plain.token_ids)
            m = summarize(row.trace)
            row.words_differing = m.get("words_differing", 0.0 if m.get("identical_to_full") else None)
            if m.get("expectations_total"):
                row.expectations = (int(m["expectations_met"]), int(m["expectations_total"]))
                checks = getattr(row.trace.fidelity, "expectations", None) or []
                row.kept_full_expectations = all(getattr(c, "met", False) or not getattr(c, "full_met", False)
                                                 for c in checks)
        else:
            found = reader_fidelity(bundle, row.token_ids, plain.token_ids, expectations)
            row.words_differing, row.expectations = found.get("words_differing"), found.get("expectations")
            row.kept_full_expectations = found.get("kept")
    anchors = {name: next((r for r in rows if r.method == name), None) for name in (HF_GREEDY, HF_LOOKUP)}
    for row in rows:
        for name, anchor in list(anchors.items()) + [("plain", plain)]:
            if anchor is not None and anchor.tokens_per_s:
                row.ratios[name] = row.tokens_per_s / anchor.tokens_per_s
    return rows


ROW_ORDER = (HF_GREEDY, "plain", HF_LOOKUP, HF_ASSISTED, "SD", SAME_DRAFTS, "VIA-SD")
HEADER = (f"{'prompt':17}{'method':22}{'tok/s':>7}{'x HF gr.':>9}{'x HF lk.':>9}{'meas. x':>9}{'pred. x':>9}"
          f"{'accel. x':>9}{'words':>7}{'expect.':>9}{'same':>6}")


def _fmt(value: float | None, spec: str, width: int) -> str:
    return (format(value, spec) if value is not None else "-").rjust(width)


def format_row(row: Row, reference: list[int]) -> str:
    method = row.key if row.method not in (HF_LOOKUP, HF_ASSISTED) else row.method
    expect = f"{row.expectations[0]}/{row.expectations[1]}" if row.expectations else "-"
    return (f"{row.prompt[:16]:17}{method:22}{row.tokens_per_s:7.1f}{_fmt(row.ratios.get(HF_GREEDY), '.2f', 9)}"
            f"{_fmt(row.ratios.get(HF_LOOKUP), '.2f', 9)}{_fmt(row.ratios.get('plain'), '.2f', 9)}"
            f"{_fmt(row.predicted, '.2f', 9)}{_fmt(row.accelerator, '.2f', 9)}"
            f"{_fmt(row.words_differing, '.1%', 7)}{expect:>9}{'yes' if row.token_ids == reference else 'no':>6}")


def summary(rows: list[Row], costs: CostModel | None = None) -> list[str]:
    """Medians over prompts per method, the issue's targets, the prompt-lookup ceiling (with `costs`) and
    the profile's prediction error."""
    lines = [f"\nmedians over prompts{'':7}{'x HF gr.':>9}{'x HF lk.':>9}{'meas. x':>9}{'pred. x':>9}"
             f"{'words':>7}{'expect. kept':>13}"]
    keys = list(dict.fromkeys(r.key for r in rows))
    med: dict[str, dict[str, float | None]] = {}
    for key in keys:
        mine = [r for r in rows if r.key == key]

        def median(values: list[float | None]) -> float | None:  # "-" unless every prompt has the value
            return statistics.median(values) if values and None not in values else None

        med[key] = {"greedy": median([r.ratios.get(HF_GREEDY) for r in mine]),
                    "lookup": median([r.ratios.get(HF_LOOKUP) for r in mine]),
                    "plain": median([r.ratios.get("plain") for r in mine]),
                    "pred": median([r.predicted for r in mine]),
                    "words": median([r.words_differing for r in mine])}
        judged = [r for r in mine if r.kept_full_expectations is not None]
        met = f"{sum(r.kept_full_expectations for r in judged)}/{len(judged)}" if judged else "-"
        m = med[key]
        lines.append(f"  {key:25}{_fmt(m['greedy'], '.2f', 9)}{_fmt(m['lookup'], '.2f', 9)}"
                     f"{_fmt(m['plain'], '.2f', 9)}{_fmt(m['pred'], '.2f', 9)}{_fmt(m['words'], '.1%', 7)}{met:>13}")
    lines.append("\ntargets (issue 7, medians over prompts):")
    for key, anchor, col in (("plain", "HF greedy", "greedy"), ("SD ngram", "HF prompt lookup", "lookup"),
                             ("VIA-SD ngram", "HF prompt lookup (target 1.2x, <= 1% words)", "lookup")):
        value = med.get(key, {}).get(col)
        goal = 1.2 if key == "VIA-SD ngram" else 1.0
        if value is not None:
            verdict = "met" if value >= goal else f"MISSED by {goal - value:.3f}"
            lines.append(f"  {key} vs {anchor}: {value:.3f}x -> {verdict}")
    via, twin = med.get("VIA-SD ngram"), med.get(f"{SAME_DRAFTS} ngram")
    if via and twin and via.get("plain") and twin.get("plain"):
        ratio = via["plain"] / twin["plain"]
        words = via.get("words")
        lines.append(f"  VIA-SD ngram words differing (median): {_fmt(words, '.1%', 0).strip()} -> "
                     f"{'met' if words is not None and words <= 0.01 else 'MISSED'}")
        lines.append(f"  floor: VIA-SD ngram vs {SAME_DRAFTS} ngram (same drafter, lossless): {ratio:.3f}x -> "
                     f"{'met' if ratio >= 1.0 else f'MISSED by {1.0 - ratio:.3f}'}")
    sd = [r for r in rows if r.key == "SD ngram" and r.trace is not None and r.ratios.get(HF_LOOKUP)]
    if costs is not None and sd:
        from core.analysis.breakeven import lookup_ceiling

        ceilings = [lookup_ceiling(r.trace, costs) for r in sd]
        versus_hf = [c * r.ratios[HF_LOOKUP] for c, r in zip(ceilings, sd, strict=True)]
        lines.append("  ceiling (core.analysis.breakeven.lookup_ceiling, priced by the profile): a prompt-lookup "
                     "decoder that "
                     f"knew every verdict in advance would run at most {statistics.median(ceilings):.2f}x our "
                     f"classic SD (median; {min(ceilings):.2f}-{max(ceilings):.2f}), i.e. about "
                     f"{statistics.median(versus_hf):.2f}x HF prompt lookup")
    errors = [abs(r.predicted / r.ratios["plain"] - 1) for r in rows
              if r.trace is not None and r.method != "plain" and r.predicted and r.ratios.get("plain")]
    if errors:
        worst = max(errors)
        lines.append(f"\nprofile prediction vs measured speed-up over our plain: median error "
                     f"{statistics.median(errors):.0%}, worst {worst:.0%} over {len(errors)} runs "
                     f"({'within' if statistics.median(errors) <= 0.15 else 'OUTSIDE'} the 15 % target)")
    return lines


def call_shape(rows: list[Row], costs: CostModel) -> list[str]:
    """Does the profile's law have the right shape on this run's own passes? Measured / predicted time per
    kind of call, relative to one-token full passes (1.00 everywhere = the law prices calls in the right
    proportions, whatever the machine's load did to absolute times)."""
    if costs.profile.kind != "measured" or costs.profile_note:
        return []
    buckets: dict[str, list[float]] = {}
    for row in rows:
        if row.trace is None:
            continue
        for round_ in row.trace.rounds:
            for c in round_.calls:
                if c.from_memo or c.wall_s <= 0 or (row.drafter == "model" and c.role == "drafter"):
                    continue
                size = "1 token" if c.tokens_processed == 1 else "2-16" if c.tokens_processed <= 16 else ">16"
                predicted = costs.costs(costs.verifier).time(c.layers, c.tokens_processed)
                buckets.setdefault(f"{c.role} {size}", []).append(c.wall_s / predicted)
    base = statistics.median(buckets.get("full 1 token", [1.0]))
    cells = [f"{k} {statistics.median(v) / base:.2f} (n={len(v)})" for k, v in sorted(buckets.items())]
    return ["\nprofile shape on this run's passes (measured/predicted, relative to full 1-token passes; "
            f"those ran {base:.2f}x the profile's time):", "  " + "; ".join(cells)]


def explanations(rows: list[Row], costs: CostModel) -> list[str]:
    from core.analysis.breakeven import explain

    lines = ["\nwhy (first prompt, core.analysis.breakeven, priced by the profile):"]
    first = rows[0].prompt
    for row in rows:
        if row.prompt == first and row.trace is not None and row.method != "plain":
            lines.append(f"  {row.key}: {explain(row.trace)}")
    return lines


def default_families() -> str:
    from examples import FAMILIES

    return "grounded" if "grounded" in FAMILIES else "summarisation,code"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=EMBEDDED_ID)
    p.add_argument("--drafter-model", help="a separate drafter (same tokenizer): adds HF assisted and drafter 'model'")
    p.add_argument("--device")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--families", help="example families (default: grounded)")
    p.add_argument("--per-family", type=int, default=12)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--drafters", default="ngram,self", help="comma list of self, ngram, model")
    p.add_argument("--gamma", type=int, default=DecodeConfig.gamma, help="draft length for model drafters")
    p.add_argument("--lookup-tokens", type=int, default=10,
                   help="prompt lookup: HF prompt_lookup_num_tokens and our gamma with drafter ngram")
    p.add_argument("--tau-accept", type=float, help="VIA-SD (default: DecodeConfig's with model drafters, "
                   "core.config.LOOKUP_PRESET's with prompt lookup)")
    p.add_argument("--tau-slim", type=float)
    p.add_argument("--copy-evidence", help="VIA-SD with prompt lookup (default: LOOKUP_PRESET's)")
    p.add_argument("--audit-span", type=int)
    p.add_argument("--draft-stop-below", type=float)
    p.add_argument("--ngram-size", type=int)
    p.add_argument("--lookup-gamma", type=int, help="VIA-SD draft length, prompt lookup (default: LOOKUP_PRESET)")
    p.add_argument("--profile", help="cost profile for the pred. column: a name in core/profiles, a JSON file, or "
                   "'measure' to time passes first in this process (default: this device's shipped profile)")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument("--repeats", type=int, default=1, help="runs per method and prompt; the median-time run is kept")
    p.add_argument("--quick", action="store_true", help="CI size: 2 prompts, 32 new tokens")
    args = p.parse_args(argv)
    if args.quick:
        args.per_family, args.max_new_tokens = 2, 32
    args.drafters = [d for d in args.drafters.split(",") if d]
    if args.drafter_model and "model" not in args.drafters:
        args.drafters.append("model")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from transformers.utils import logging as hf_logging

    from examples import load_prompts

    hf_logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    bundle = load_bundle(args.model, args.drafter_model, args.device, args.dtype)
    if "model" in args.drafters and bundle.drafter is None:
        args.drafters.remove("model")
    device = bundle.verifier.device
    if args.profile == "measure":  # time the passes now, in this process, under this machine's current load
        profile = measure_profile(bundle, f"{device.type}-measured-now", repeats=3)
    else:
        profile = device_profile(device, args.profile)
    costs = CostModel(bundle.verifier.model, profile)
    accelerator = CostModel(bundle.verifier.model)
    families = (args.families or default_families()).split(",")
    prompts = [p for f in families for p in load_prompts(f)[: args.per_family]]
    load = f"; load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"{args.model} on {machine_description(device)} ({str(bundle.verifier.dtype).replace('torch.', '')}); "
          f"{', '.join(f'{k} {v}' for k, v in versions().items())}{load}")
    print(f"{len(prompts)} prompts ({', '.join(families)}), {args.max_new_tokens} new tokens, greedy, "
          f"median of {args.repeats} interleaved run(s) per method; "
          f"model drafters: gamma {args.gamma}, tau {args.tau_accept or DecodeConfig.tau_accept}/"
          f"{args.tau_slim or DecodeConfig.tau_slim}; prompt lookup: HF and SD {args.lookup_tokens} tokens")
    if "ngram" in args.drafters:
        via = lookup_config(args)
        print(f"VIA-SD ngram (and {SAME_DRAFTS}, its lossless twin): gamma {via.gamma}, n <= {via.ngram_size}, "
              f"cut below {via.draft_stop_below}, tau {via.tau_accept}/{via.tau_slim}, copies: {via.copy_evidence}"
              f" (span {via.audit_span})")
    print(f"pred. x: {costs.label}\naccel. x: {accelerator.label}\n")
    warm = encode_prompt(bundle.verifier.tokenizer, prompts[0].text)
    hf_generate(bundle, warm, 4)
    generate(bundle, prompts[0].text, DecodeConfig(mode="plain", max_new_tokens=4), replay=False)
    print(HEADER)
    print("-" * len(HEADER))
    rows: list[Row] = []
    for i, prompt in enumerate(prompts):
        label = f"{prompt.family} {prompt.index + 1}"
        mine = run_prompt(bundle, prompt, label, args, costs, accelerator, flip=i % 2 == 1)
        plain = next(r for r in mine if r.method == "plain")
        for row in mine:
            print(format_row(row, plain.token_ids), flush=True)
        rows.extend(mine)
    print("\n".join(summary(rows, costs)))
    print("\n".join(call_shape(rows, costs)))
    print("\n".join(explanations(rows, costs)))
    print("\nx HF gr. / x HF lk.: tokens/s over HF greedy / HF prompt lookup on the same prompt, same run; "
          "meas. x: over our plain; pred. x / accel. x: speed-up over plain the cost profile predicts from the "
          "run's calls; words: share of words differing from the full model's greedy output; expect.: "
          "expectations met (expect. kept: prompts meeting every expectation the full model's own output meets); "
          "same: tokens identical to our plain greedy output. A shared machine makes "
          "wall-clock numbers noisy: compare ratios, and rerun for yours.")


if __name__ == "__main__":
    main()
