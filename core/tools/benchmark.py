"""`python -m core.tools.benchmark`: our decoders against Hugging Face's own, side by side, as one printed table.

For every prompt, on the same model, device and prompt ids, interleaved (the order flips on every
other prompt so drift in a shared machine's load does not favour one side):
* anchors: Hugging Face `generate` greedy, `generate(prompt_lookup_num_tokens=N)` and, when a
  separate drafter is loaded (`--drafter-model`), `generate(assistant_model=...)`; where llama-cpp-python
  imports, llama.cpp greedy on the model's GGUF, fed the same prompt ids (core/tools/llama_anchor.py);
* ours, every pass run for real (no memo): plain, classic SD and VIA-SD with each drafter.
Columns: tokens/s; ratios to HF greedy and to HF prompt lookup; the measured speed-up over our
plain decoding beside the speed-up a cost profile predicts from the run's calls (`pred.`, this
machine's profile by default) and the modelled accelerator's (`accel.`); words differing from the
full model's own greedy output and expectations met (grounded prompts carry them); identical
tokens. Below: medians per method, the targets the README sets, and how well the profile predicted.
"""

from __future__ import annotations

import argparse
import os
import signal
from datetime import datetime, timezone
from pathlib import Path

import torch

from core.analysis.hf_baselines import hf_generate
from core.config import DecodeConfig, preset
from core.decoding.cost import CostModel
from core.decoding.cost_profiles import device_profile
from core.decoding.engine import generate
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle, load_model, quantise_drafter
from core.models.precision import cpu_class, dtype_name
from core.models.prompting import encode_prompt
from core.tools.bench_report import HEADER, call_shape, explanations, format_row, summary
from core.tools.bench_rows import SAME_DRAFTS, Row, lookup_config, run_prompt
from core.tools.llama_anchor import LlamaCall, table_anchor
from core.tools.pair_bench import PAIRS, HfCall, Method, WithDrafter, fit_pair, methods, run_method, run_pair_prompt
from core.tools.pair_report import HEADER as PAIR_HEADER
from core.tools.pair_report import row_line, summary_lines
from core.tools.profile import machine_description, measure_profile, versions
from examples import ExamplePrompt, load_prompts


def default_families() -> str:
    from examples import FAMILIES
    return "grounded" if "grounded" in FAMILIES else "summarisation,code"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help=f"the verifier (default: {EMBEDDED_ID}, or the pair's)")
    p.add_argument("--drafter-model", help="a separate drafter (same tokenizer): adds HF assisted and drafter 'model'")
    p.add_argument("--drafter-quant", help="the drafter's setting (core.models.drafter_quant: none, int8, int4, "
                   "int4+vocab, ...; default: the pair preset's recommended one, else none)")
    p.add_argument("--pair", choices=sorted(PAIRS), help="the paper's table on a real pair (core/tools/pair_bench.py): "
                   "code and math prompts, this CPU's recommended precision, HF greedy / assisted / lookup, plain, SD, "
                   "VIA-SD, BiLD, cascade")
    p.add_argument("--verifier-quant", help="the verifier's precision (core.models.verifier_quant: none, int8, auto; "
                   "default: this CPU's recommendation for the pair, else none)")
    p.add_argument("--gguf", help="the GGUF llama.cpp decodes in its row (default: an embedded verifier's own, "
                   "joined in the model cache); the row runs only where llama-cpp-python imports")
    p.add_argument("--device")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--families", help="example families (default: grounded)")
    p.add_argument("--per-family", type=int, help="prompts per family (default 12; with --pair: all)")
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--drafters", default="ngram,self", help="comma list of self, ngram, model")
    p.add_argument("--gamma", type=int, help="draft length for model drafters (default: DecodeConfig's; with --pair: "
                   "the pair preset's, for classic SD, BiLD, cascade and HF assisted's fixed-gamma row)")
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
    pair = p.add_argument_group("with --pair")
    pair.add_argument("--prompts", help="comma list of FAMILY:INDEX (0-based), e.g. code:9,math:0 (default: every code "
                      "prompt and every math prompt with a final answer, or --per-family of each)")
    pair.add_argument("--slim-route", help="VIA-SD's slim route (default: the preset's, calibrated-slim)")
    pair.add_argument("--via-gamma", type=int, help="VIA-SD's draft length (default: the preset's)")
    pair.add_argument("--bild-rollback", type=float, default=2.0, help="BiLD rollback threshold in nats")
    pair.add_argument("--bild-fallback", type=float, default=0.5, help="BiLD fallback: draft stops below this")
    pair.add_argument("--cascade-alpha", type=float, default=0.1, help="cascade-chow: defer when max p < 1 - alpha")
    pair.add_argument("--leads", default="", help="comma list of extra VIA-SD variants (core.tools.pair_bench."
                      "lead_configs): VIA-SD audited, VIA-SD no slim, VIA-SD ranked, VIA-SD hybrid, ...")
    pair.add_argument("--skip", default="", help="comma list of table rows to leave out")
    pair.add_argument("--drafter-quants", default="", help="comma list of other drafter settings: HF assisted, "
                      "classic SD and VIA-SD again with each (rows 'SD [int8]', ...), same verifier")
    pair.add_argument("--traces-dir", type=Path, help="write every VIA-SD run's trace there as JSON (Trace.to_json)")
    args = p.parse_args(argv)
    args.leads = [x.strip() for x in args.leads.split(",") if x.strip()]
    args.skip = [x.strip() for x in args.skip.split(",") if x.strip()]
    args.drafter_quants = [x.strip() for x in args.drafter_quants.split(",") if x.strip()]
    if args.pair:
        args.model = args.model or PAIRS[args.pair][0]
        args.drafter_model = args.drafter_model or PAIRS[args.pair][1]
        args.fit = args.gamma is None and args.via_gamma is None  # then fitted to this machine (pair_bench.fit_pair)
        args.gamma = args.gamma or preset(args.pair).gamma
    elif args.per_family is None:
        args.per_family = 12
    args.model = args.model or EMBEDDED_ID
    args.gamma = args.gamma or DecodeConfig.gamma
    if args.quick:
        args.per_family, args.max_new_tokens = 2, 32
    args.drafters = [d for d in args.drafters.split(",") if d]
    if args.drafter_model and "model" not in args.drafters:
        args.drafters.append("model")
    return args


def pair_prompts(args: argparse.Namespace) -> list[ExamplePrompt]:
    """The pair's prompts: --prompts, else every code prompt and every math prompt with a final answer."""
    if args.prompts:
        chosen = []
        for spec in args.prompts.split(","):
            family, _, index = spec.strip().partition(":")
            chosen.append(load_prompts(family)[int(index)])
        return chosen
    families = (args.families or "code,math").split(",")
    picked = [p for f in families for p in load_prompts(f)
              if f != "math" or (p.expectations is not None and p.expectations.answer is not None)]
    if args.per_family:
        picked = [p for f in families for p in [q for q in picked if q.family == f][:args.per_family]]
    return picked


def drafter_variants(bundle: ModelBundle, quants: list[str]) -> dict[str, ModelBundle]:
    """The bundle's verifier with the drafter loaded afresh in each other setting (one shared prediction memo)."""
    out = {}
    for quant in quants:
        drafter = load_model(bundle.drafter.name, str(bundle.drafter.device), dtype_name(bundle.drafter.dtype))
        out[quant] = ModelBundle(verifier=bundle.verifier, drafter=quantise_drafter(drafter, quant), memo=bundle.memo)
    return out


def main_pair(args: argparse.Namespace, bundle: ModelBundle, costs: CostModel) -> None:
    """The paper's table on a real pair (core/tools/pair_bench.py runs it, core/tools/pair_report.py prints it)."""
    prompts = pair_prompts(args)
    anchor, no_llama = table_anchor(args, bundle, prompts)
    print(fit_pair(args, bundle))
    table = methods(args, args.pair, anchor)
    variants = drafter_variants(bundle, args.drafter_quants)
    device = bundle.verifier.device
    start = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{start}; {args.model} verified, {bundle.drafter.label} in {dtype_name(bundle.drafter.dtype)} drafting "
          "(other drafters: "
          f"{', '.join(v.drafter.label for v in variants.values()) or 'none'}), on {machine_description(device)}; "
          f"{dtype_name(bundle.verifier.dtype)}, verifier {bundle.verifier.verifier_quant}; CPU class "
          f"{cpu_class(device)}; CPU bf16 instructions: {cpu_bf16()}; "
          f"{', '.join(f'{k} {v}' for k, v in versions().items())}; load average {load_average()}")
    print(f"{len(prompts)} prompts ({', '.join(dict.fromkeys(p.family for p in prompts))}), {args.max_new_tokens} new "
          f"tokens, greedy, {args.repeats} interleaved run(s) per method (order flipped every other prompt)")
    for name, method in table.items():
        print(f"  {name}: {describe_method(method)}")
    if anchor is None and no_llama:
        print(no_llama)
    print(f"pred. x: {costs.label}\n")
    first = prompts[0]
    for method in table.values():  # warm every path once (first calls pay for lazy initialisation)
        warm = method.with_(max_new_tokens=4)
        run_method(bundle, first, encode_prompt(bundle.verifier.tokenizer, first.text), "warm", "warm", warm, costs,
                   variants)
    print(PAIR_HEADER)
    print("-" * len(PAIR_HEADER))
    rows: list[Row] = []
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill PID` ends the loop and still prints the summary
    try:
        for i, prompt in enumerate(prompts):
            mine = run_pair_prompt(bundle, prompt, f"{prompt.family}:{prompt.index}", table, costs, flip=i % 2 == 1,
                                   repeats=args.repeats, variants=variants)
            reference = next(r for r in mine if r.method == "plain").token_ids
            for row in mine:
                print(row_line(row, reference), flush=True)
                if args.traces_dir and row.trace is not None and row.method.startswith("VIA-SD"):
                    name = f"{prompt.family}{prompt.index}-{row.method.replace(' ', '-')}.json"
                    args.traces_dir.mkdir(parents=True, exist_ok=True)
                    (args.traces_dir / name).write_text(row.trace.to_json())
            rows.extend(mine)
    except KeyboardInterrupt:
        print(f"\ninterrupted: the summary covers the {len(rows) // max(len(table), 1)} prompts that finished")
    print("\n".join(summary_lines(rows)))
    print(f"\nfinished {datetime.now(timezone.utc).strftime('%H:%M UTC')}; load average {load_average()}. "
          "rej.: rejection rate; acc.len: mean acceptance length (1 + accepted / drafting rounds); words: share of "
          "words differing from our plain (same-dtype greedy) output (llama.cpp's: numerics); expect.: expectations "
          "met; answer: the math prompt's final answer; pred. x: the cost profile's predicted speed-up over plain "
          "from the run's calls; same: tokens identical to our plain output. A shared machine makes wall-clock "
          "numbers noisy: compare ratios, and rerun for yours.")


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def cpu_bf16() -> str:
    """Whether this CPU advertises native bf16 (avx512_bf16 or AMX), read from /proc/cpuinfo; detected, not assumed."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    found = sorted(flags & {"avx512_bf16", "amx_bf16"})
    return ", ".join(found) if found else "none"


def describe_method(method: Method) -> str:
    if isinstance(method, LlamaCall):
        return method.describe()
    if isinstance(method, WithDrafter):
        return f"{describe_method(method.method)}, drafter {method.quant}"
    if isinstance(method, HfCall):
        what = {"greedy": "generate(do_sample=False)", "lookup": f"prompt_lookup_num_tokens={method.gamma}",
                "assisted": "assistant_model=drafter, " + ("its defaults" if method.gamma is None else
                                                           f"{method.gamma} tokens, constant, no confidence cut")}
        return what[method.kind]
    c = method
    if c.mode == "plain":
        return "mode plain (the verifier alone, one token per pass)"
    text = f"mode {c.mode}, drafter {c.drafter}, gamma {c.gamma}"
    if c.mode == "via":
        text += f", tau {c.tau_accept}/{c.tau_slim}, slim route {c.slim_route}, copy evidence {c.copy_evidence}"
    if c.verify_rule != "exact":
        text += f", {c.verify_rule} alpha {c.verify_alpha}"
    if c.draft_stop_below:
        text += f", draft stops below {c.draft_stop_below}"
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    bundle = load_bundle(args.model, args.drafter_model, args.device, args.dtype, drafter_quant=args.drafter_quant,
                         verifier_quant=args.verifier_quant)
    if "model" in args.drafters and bundle.drafter is None:
        args.drafters.remove("model")
    device = bundle.verifier.device
    if args.profile == "measure":  # time the passes now, in this process, under this machine's current load
        profile = measure_profile(bundle, f"{device.type}-measured-now", repeats=3)
    else:
        profile = device_profile(device, args.profile, bundle.verifier.dtype)  # this device, dtype and threads
    costs = CostModel(bundle.verifier.model, profile)
    if args.pair:
        return main_pair(args, bundle, costs)
    accelerator = CostModel(bundle.verifier.model)
    families = (args.families or default_families()).split(",")
    prompts = [p for f in families for p in load_prompts(f)[: args.per_family]]
    anchor, llama_line = table_anchor(args, bundle, prompts)
    load = f"; load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"{args.model} on {machine_description(device)}, {cpu_class(device)} ({dtype_name(bundle.verifier.dtype)}, "
          f"verifier {bundle.verifier.verifier_quant}); {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}; "
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
    if llama_line:
        print(llama_line)
    print(f"pred. x: {costs.label}\naccel. x: {accelerator.label}\n")
    warm = encode_prompt(bundle.verifier.tokenizer, prompts[0].text)
    hf_generate(bundle, warm, 4)
    generate(bundle, prompts[0].text, DecodeConfig(mode="plain", max_new_tokens=4), replay=False)
    print(HEADER)
    print("-" * len(HEADER))
    rows: list[Row] = []
    for i, prompt in enumerate(prompts):
        label = f"{prompt.family} {prompt.index + 1}"
        mine = run_prompt(bundle, prompt, label, args, costs, accelerator, flip=i % 2 == 1, anchor=anchor)
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
