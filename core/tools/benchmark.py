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

import torch

from core.analysis.hf_baselines import hf_generate
from core.config import DecodeConfig
from core.decoding.cost import CostModel
from core.decoding.cost_profiles import device_profile
from core.decoding.engine import generate
from core.models.loading import EMBEDDED_ID, load_bundle
from core.models.prompting import encode_prompt
from core.tools.bench_report import HEADER, call_shape, explanations, format_row, summary
from core.tools.bench_rows import SAME_DRAFTS, Row, lookup_config, run_prompt
from core.tools.profile import machine_description, measure_profile, versions


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
