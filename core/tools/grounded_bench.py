"""`python -m core.tools.grounded_bench`: VIA-SD with prompt lookup against Hugging Face, on the grounded family.

For each grounded prompt, in one process and interleaved prompt by prompt (so every ratio is taken
side by side on the same machine in the same minute): Hugging Face `generate` greedy, HF
`generate(prompt_lookup_num_tokens=10)`, and our engine under each named setting, every pass run
for real (no memo). Fidelity is measured against HF greedy's own output (the full model's):
words differing (core.analysis.textdiff) and the prompt's expectations, met by this output vs by the full
model's. Prints one row per run and the medians over prompts per setting.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field

import torch

from core.analysis.fidelity import attach_fidelity
from core.analysis.hf_baselines import hf_generate
from core.analysis.metrics import summarize
from core.analysis.textdiff import word_diff
from core.config import LOOKUP_PRESET, DecodeConfig
from core.decoding.engine import generate
from core.models.loading import EMBEDDED_ID, load_bundle
from core.models.prompting import encode_prompt
from core.trace import Trace
from examples import ExamplePrompt, load_prompts

LOOKUP = dict(drafter="ngram", gamma=10, ngram_size=3)
SETTINGS: dict[str, DecodeConfig] = {
    "plain": DecodeConfig(mode="plain"),
    "sd": DecodeConfig(mode="sd", **LOOKUP),
    "via-statistic": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="statistic", **LOOKUP),
    "via-slim": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="slim", **LOOKUP),
    "via-slim-cheap": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="slim",
                                   slim_route="auto-draft", **LOOKUP),
    "via-verifier": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="verifier", **LOOKUP),
    "via-verifier-gated": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="verifier",
                                       slim_min_hit_rate=0.5, **LOOKUP),
    # The recommended setting (core.config.LOOKUP_PRESET), its lossless twin, and the same drafts with copies
    # trusted on the lookup statistic alone at falling tau_accept: the speed-versus-words-differing curve.
    "sd-same-drafts": LOOKUP_PRESET.with_(mode="sd"),
    "via-audit": LOOKUP_PRESET,
    **{f"via-trust-{tau}": LOOKUP_PRESET.with_(copy_evidence="statistic", tau_accept=tau) for tau in (0.9, 0.6, 0.3)},
}
"""Our settings by name; `--settings` picks some. All use prompt lookup (n <= 3; gamma 10, or LOOKUP_PRESET's)."""
DEFAULT_SETTINGS = ("sd", "sd-same-drafts", "via-audit", "via-trust-0.9", "via-trust-0.6", "via-trust-0.3")


@dataclass
class _Tally:
    """Per setting, one value per prompt: speed ratio to HF lookup, words differing, task kept."""

    ratios: dict[str, list[float]] = field(default_factory=dict)
    differing: dict[str, list[float]] = field(default_factory=dict)
    task_kept: dict[str, list[bool]] = field(default_factory=dict)


class _PromptRows:
    """The rows of one prompt, printed as each run finishes; fidelity against HF greedy's output."""

    def __init__(self, prompt: ExamplePrompt, reference: list[int], tokenizer: object, tally: _Tally) -> None:
        self.prompt, self.reference, self.tokenizer, self.tally = prompt, reference, tokenizer, tally
        self.reference_text = tokenizer.decode(reference, skip_special_tokens=True)
        self.full_checks = prompt.expectations.check(self.reference_text) if prompt.expectations else []
        self.speeds: dict[str, float] = {}

    def add(self, name: str, speed: float, ids: list[int], trace: Trace | None = None) -> None:
        self.speeds[name] = speed
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        diff = word_diff(text, self.reference_text)
        checks = self.prompt.expectations.check(text) if self.prompt.expectations else []
        kept = all(c.met for c, f in zip(checks, self.full_checks, strict=True) if f.met)
        vs_lookup = speed / self.speeds["hf-lookup"] if "hf-lookup" in self.speeds else float("nan")
        if name != "hf-greedy":  # it runs first, before the lookup run it is compared with
            self.tally.ratios.setdefault(name, []).append(vs_lookup)
            self.tally.differing.setdefault(name, []).append(diff.words_differing)
            self.tally.task_kept.setdefault(name, []).append(kept)
        m = summarize(trace) if trace is not None else {}
        nan = float("nan")
        print(f"{'g' + str(self.prompt.index + 1):5}{name:20}{speed:7.1f}{speed / self.speeds['hf-greedy']:11.2f}x"
              f"{vs_lookup:11.2f}x{diff.words_differing:10.1%}{sum(c.met for c in checks):>8}/{len(checks):<3}"
              f"{sum(f.met for f in self.full_checks):>6}/{len(self.full_checks):<3}"
              f"{m.get('share_direct-accepted', 0):6.0%}{m.get('full_calls_per_token', nan):9.2f}"
              f"{m.get('slim_calls_per_token', nan):9.2f}{'yes' if ids == self.reference else 'no':>6}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--prompts", default="all", help="'all' or comma-separated grounded indices from 1")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--settings", default=",".join(DEFAULT_SETTINGS), help=f"from: {', '.join(SETTINGS)}")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    prompts = load_prompts("grounded")
    if args.prompts != "all":
        prompts = [prompts[int(i) - 1] for i in args.prompts.split(",")]
    names = args.settings.split(",")
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        parser.error(f"unknown settings {unknown}; choose from {', '.join(SETTINGS)}")
    bundle = load_bundle(args.model)
    tokenizer = bundle.verifier.tokenizer
    print(f"# {args.model} on {bundle.verifier.device} ({bundle.verifier.dtype}), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {args.max_new_tokens} new tokens, {len(prompts)} grounded prompts")
    header = (f"{'#':5}{'setting':20}{'tok/s':>7}{'x HF greedy':>12}{'x HF lookup':>12}"
              f"{'words diff':>11}{'expect. met':>12}{'full met':>9}{'tier1':>7}{'full/tok':>9}{'slim/tok':>9}"
              f"{'same':>6}")
    print(header)
    print("-" * len(header))
    tally = _Tally()
    for prompt in prompts:
        prompt_ids = encode_prompt(tokenizer, prompt.text)
        reference, greedy_s = hf_generate(bundle, prompt_ids, args.max_new_tokens)
        rows = _PromptRows(prompt, reference, tokenizer, tally)
        rows.add("hf-greedy", len(reference) / greedy_s, reference)
        lookup_ids, lookup_s = hf_generate(bundle, prompt_ids, args.max_new_tokens,
                                            prompt_lookup_num_tokens=10)
        rows.add("hf-lookup", len(lookup_ids) / lookup_s, lookup_ids)
        for name in names:
            trace = generate(bundle, prompt.text, SETTINGS[name].with_(max_new_tokens=args.max_new_tokens),
                             replay=False)
            attach_fidelity(bundle, trace, reference=reference, expectations=prompt.expectations)
            rows.add(name, summarize(trace)["tokens_per_s"], trace.token_ids, trace)
    print("\nmedian over prompts (x HF lookup = tokens/s ratio to HF prompt lookup, side by side):")
    print(f"{'setting':20}{'x HF lookup':>12}{'words diff med':>15}{'max':>7}{'task kept':>11}")
    for name in tally.ratios:
        kept, differing = tally.task_kept[name], tally.differing[name]
        print(f"{name:20}{statistics.median(tally.ratios[name]):11.2f}x{statistics.median(differing):14.1%}"
              f"{max(differing):7.1%}{sum(kept):>6}/{len(kept)}")
    print("task kept = every expectation the full model's own output meets is met by this output too; "
          "full/tok, slim/tok = verifier passes per generated token (load-independent)")


if __name__ == "__main__":
    main()
