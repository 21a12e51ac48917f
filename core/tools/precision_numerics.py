"""`python -m core.tools.precision_numerics`: what a verifier precision changes, per example family.

A quantised verifier is another model: it is exact within its precision (plain, classic SD and VIA-SD at
tau 1.0 / 1.0 agree token for token), but its plain output is not float32's. This measures that difference, apart
from the tiers (issue 43, item 2). For each family of examples/, the first `--per-family` prompts are decoded plain
and greedy for `--tokens` new tokens (one token per pass, as plain decoding computes them:
core.analysis.fidelity.greedy_reference) in float32 (the reference, verifier quantisation "none"), then the model
is quantised in place (`--quant`, core.models.verifier_quant) and decoded again. Per family:

* top-1: teacher-forced top-1 agreement, the quantised model scoring float32's answer (its argmax at every
  position against float32's token; core.analysis.fidelity.teacher_forced), pooled over the tokens scored;
* words: the share of words of the quantised plain output differing from float32's (core.analysis.textdiff
  .word_diff, as every benchmark reads it), mean over prompts;
* identical: prompts whose quantised output equals float32's token for token.

    python -m core.tools.precision_numerics --model embedded:qwen2.5-coder-1.5b-instruct --quant int8 --threads 2
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import torch

from core.analysis.fidelity import greedy_reference, teacher_forced
from core.analysis.hf_baselines import reader_fidelity
from core.models.loading import QWEN_CODER_15B_ID, LoadedModel, ModelBundle, load_model
from core.models.precision import cpu_class
from core.models.prompting import encode_prompt
from core.models.verifier_quant import VERIFIER_QUANTS, quantise_verifier, resolve
from core.tools.profile import machine_description
from examples import FAMILIES, ExamplePrompt, load_prompts


@dataclass
class PromptNumerics:
    """One prompt: float32's plain output, the quantised one, and how they compare."""

    family: str
    index: int
    reference: list[int]
    output: list[int]
    agreed: int  # positions of `reference` where the quantised model's argmax is the reference token
    words_differing: float

    @property
    def identical(self) -> bool:
        return self.output == self.reference


def measure(loaded: LoadedModel, prompts: list[ExamplePrompt], quant: str, tokens: int) -> list[PromptNumerics]:
    """Decode every prompt in the model's own precision, quantise it in place with `quant` ("none" keeps it: the
    reference against itself), decode again and score. The model is left quantised."""
    bundle = ModelBundle(verifier=loaded)
    ids = [encode_prompt(loaded.tokenizer, p.text) for p in prompts]
    references = [greedy_reference(bundle, i, tokens, use_memo=False) for i in ids]
    if quant != "none":
        quantise_verifier(loaded.model, quant)
        loaded.verifier_quant = quant
    out = []
    for prompt, prompt_ids, reference in zip(prompts, ids, references, strict=True):
        output = greedy_reference(bundle, prompt_ids, tokens, use_memo=False)
        agreement, _ = teacher_forced(bundle, prompt_ids, reference, use_memo=False)
        words = reader_fidelity(bundle, output, reference, None)["words_differing"]
        out.append(PromptNumerics(prompt.family, prompt.index, reference, output, round(agreement * len(reference)),
                                  words))
    return out


@dataclass
class FamilyRow:
    """A family's (or every prompt's) figures, aggregated as the module docstring says."""

    name: str
    prompts: int
    scored: int
    agreement: float
    words_differing: float
    identical: int


def aggregate(name: str, results: list[PromptNumerics]) -> FamilyRow:
    scored = sum(len(r.reference) for r in results)
    return FamilyRow(name, len(results), scored, sum(r.agreed for r in results) / scored if scored else 1.0,
                     sum(r.words_differing for r in results) / len(results) if results else 0.0,
                     sum(r.identical for r in results))


def rows(results: list[PromptNumerics]) -> list[FamilyRow]:
    """One row per family, in the order met, then "all"."""
    families = list(dict.fromkeys(r.family for r in results))
    return [aggregate(f, [r for r in results if r.family == f]) for f in families] + [aggregate("all", results)]


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def header(model: str, quant: str, tokens: int, per_family: int, load_start: str) -> list[str]:
    """The run's circumstances: model, date, machine, CPU class, threads, load, what is compared."""
    cpu = torch.device("cpu")
    return [f"# {model} | {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC | {machine_description(cpu)} | class "
            f"{cpu_class(cpu)} (torch {torch.backends.cpu.get_cpu_capability()}) | load {load_start} at start, "
            f"{load_average()} at end",
            f"# plain greedy, {tokens} new tokens, {per_family} prompt(s) per family: verifier {quant} "
            f"({VERIFIER_QUANTS.get(quant, quant)}) against float32 (verifier none, the reference)"]


def report(table: list[FamilyRow]) -> list[str]:
    """The printed table (markdown, so it pastes into docs/benchmarks.md)."""
    lines = ["| family | prompts | tokens scored | top-1 vs fp32 | words differing | identical |",
             "|---|---|---|---|---|---|"]
    for row in table:
        name = f"**{row.name}**" if row.name == "all" else row.name
        lines.append(f"| {name} | {row.prompts} | {row.scored} | {row.agreement:.3f} | {row.words_differing:.1%} | "
                     f"{row.identical}/{row.prompts} |")
    return lines


def chosen_prompts(families: list[str], per_family: int) -> list[ExamplePrompt]:
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise SystemExit(f"unknown family {unknown[0]!r}: choose from {', '.join(FAMILIES)}")
    return [p for f in families for p in load_prompts(f)[:per_family]]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=QWEN_CODER_15B_ID)
    p.add_argument("--quant", default="int8", help="the precision compared with float32: none, int8, auto "
                   "(core.models.verifier_quant; auto: this CPU's recommendation)")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma list of example families")
    p.add_argument("--per-family", type=int, default=3, help="prompts per family (the first N)")
    p.add_argument("--tokens", type=int, default=96, help="new tokens per prompt, plain greedy")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    prompts = chosen_prompts([f.strip() for f in args.families.split(",") if f.strip()], args.per_family)
    quant = resolve(args.quant, torch.device("cpu"), "float32", "float32")
    load_start, start = load_average(), time.perf_counter()
    loaded = load_model(args.model, "cpu", "float32")
    results = measure(loaded, prompts, quant, args.tokens)
    print("\n".join(header(args.model, quant, args.tokens, args.per_family, load_start) + report(rows(results))))
    print(f"\ntop-1: the {quant} model's argmax at each position of float32's answer, teacher-forced, pooled over "
          "tokens; words differing: of its own plain output against float32's, mean over prompts (numerics of the "
          f"precision, not of any tier); identical: token for token. {time.perf_counter() - start:.0f} s in all.")


if __name__ == "__main__":
    main()
