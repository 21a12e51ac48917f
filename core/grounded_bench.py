"""`python -m core.grounded_bench`: VIA-SD with prompt lookup against Hugging Face, on the grounded family.

For each grounded prompt, in one process and interleaved prompt by prompt (so every ratio is taken
side by side on the same machine in the same minute): Hugging Face `generate` greedy, HF
`generate(prompt_lookup_num_tokens=10)`, and our engine under each named setting, every pass run
for real (no memo). Fidelity is measured against HF greedy's own output (the full model's):
words differing (core.textdiff) and the prompt's expectations, met by this output vs by the full
model's. Prints one row per run and the medians over prompts per setting.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from core.config import DecodeConfig
from core.engine import generate
from core.fidelity import attach_fidelity
from core.metrics import summarize
from core.models import EMBEDDED_ID, ModelBundle, load_bundle
from core.prompting import encode_prompt
from core.textdiff import word_diff

LOOKUP = dict(drafter="ngram", gamma=10, ngram_size=3)
SETTINGS: dict[str, DecodeConfig] = {
    "plain": DecodeConfig(mode="plain"),
    "sd": DecodeConfig(mode="sd", **LOOKUP),
    "via-statistic": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="statistic", **LOOKUP),
    "via-slim": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="slim", **LOOKUP),
    "via-slim-cheap": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="slim",
                                   slim_route="auto-draft", **LOOKUP),
    "via-verifier": DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5, copy_evidence="verifier", **LOOKUP),
}
"""Our settings by name; `--settings` picks some. All use prompt lookup (n <= 3, gamma 10) but plain."""


def hf_generate(bundle: ModelBundle, prompt_ids: list[int], max_new_tokens: int,
                lookup: int | None) -> tuple[list[int], float]:
    """New token ids and wall seconds of Hugging Face greedy `generate` (with prompt lookup if given)."""
    model, device = bundle.verifier.model, bundle.verifier.device
    ids = torch.tensor([prompt_ids], device=device)
    extra = {"prompt_lookup_num_tokens": lookup} if lookup else {}
    pad = bundle.verifier.tokenizer.eos_token_id
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, pad_token_id=pad, **extra)
    return out[0, len(prompt_ids):].tolist(), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--prompts", default="all", help="'all' or comma-separated grounded indices from 1")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"from: {', '.join(SETTINGS)}")
    args = parser.parse_args(argv)
    from examples import load_prompts

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
    header = (f"{'prompt':10}{'setting':16}{'tok/s':>7}{'x HF greedy':>12}{'x HF lookup':>12}"
              f"{'words diff':>11}{'expect. met':>12}{'full met':>9}{'tier1':>7}{'same':>6}")
    print(header)
    print("-" * len(header))
    ratios: dict[str, list[float]] = {}
    differing: dict[str, list[float]] = {}
    task_kept: dict[str, list[bool]] = {}
    for prompt in prompts:
        prompt_ids = encode_prompt(tokenizer, prompt.text)
        rows: dict[str, tuple[float, list[int] | None, object]] = {}
        reference, greedy_s = hf_generate(bundle, prompt_ids, args.max_new_tokens, None)
        rows["hf-greedy"] = (len(reference) / greedy_s, reference, None)
        lookup_ids, lookup_s = hf_generate(bundle, prompt_ids, args.max_new_tokens, 10)
        rows["hf-lookup"] = (len(lookup_ids) / lookup_s, lookup_ids, None)
        for name in names:
            trace = generate(bundle, prompt.text, SETTINGS[name].with_(max_new_tokens=args.max_new_tokens),
                             replay=False)
            attach_fidelity(bundle, trace, reference=reference, expectations=prompt.expectations)
            rows[name] = (summarize(trace)["tokens_per_s"], trace.token_ids, trace)
        reference_text = tokenizer.decode(reference, skip_special_tokens=True)
        full_checks = prompt.expectations.check(reference_text) if prompt.expectations else []
        for name, (speed, ids, trace) in rows.items():
            text = tokenizer.decode(ids, skip_special_tokens=True)
            diff = word_diff(text, reference_text)
            checks = prompt.expectations.check(text) if prompt.expectations else []
            met = sum(c.met for c in checks)
            kept = all(c.met for c, f in zip(checks, full_checks, strict=True) if f.met)
            vs_lookup = speed / rows["hf-lookup"][0]
            ratios.setdefault(name, []).append(vs_lookup)
            differing.setdefault(name, []).append(diff.words_differing)
            task_kept.setdefault(name, []).append(kept)
            tier1 = summarize(trace)["share_direct-accepted"] if trace is not None else 0.0
            print(f"{'g' + str(prompt.index + 1):10}{name:16}{speed:7.1f}{speed / rows['hf-greedy'][0]:11.2f}x"
                  f"{vs_lookup:11.2f}x{diff.words_differing:10.1%}{met:>8}/{len(checks):<3}"
                  f"{sum(f.met for f in full_checks):>6}/{len(full_checks):<3}{tier1:6.0%}"
                  f"{'yes' if ids == reference else 'no':>6}", flush=True)
    print("\nmedian over prompts (x HF lookup = tokens/s ratio to HF prompt lookup, side by side):")
    print(f"{'setting':16}{'x HF lookup':>12}{'words diff med':>15}{'max':>7}{'task kept':>11}")
    for name in ratios:
        kept = task_kept[name]
        print(f"{name:16}{statistics.median(ratios[name]):11.2f}x{statistics.median(differing[name]):14.1%}"
              f"{max(differing[name]):7.1%}{sum(kept):>6}/{len(kept)}")
    print("task kept = every expectation the full model's own output meets is met by this output too")


if __name__ == "__main__":
    main()
