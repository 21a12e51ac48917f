"""Fidelity: how far tiers 1 and 2 moved the output away from the full model's own output.

Two views, both measured against the full verifier:
* the full model's own greedy continuation of the same prompt (the reference): common prefix
  length and exact identity;
* teacher-forced, in one batched pass over prompt + output: the share of output tokens that are
  the full model's argmax given the output so far (`full_agreement`), and its mean negative
  log-likelihood of the output in nats per token (`full_nll`);
* as a reader: the share of words that differ from the reference text (core.textdiff, special
  tokens never count) with the differing spans, and, for prompts that carry expectations
  (core.expectations; the grounded examples do), each expectation checked on this output and on
  the reference, so "did the task get done" is judged against what the full model itself did.
"""

from __future__ import annotations

import torch

from core.config import DecodeConfig
from core.engine import encode_prompt, generate
from core.expectations import Expectations
from core.models import ModelBundle
from core.routing import resolve_route
from core.scorer import Scorer
from core.textdiff import word_diff
from core.trace import Fidelity, Trace


def reference_continuation(bundle: ModelBundle, trace: Trace) -> list[int]:
    """The full model's plain greedy output for the trace's prompt and length (memoised)."""
    config = DecodeConfig(**trace.config).with_(mode="plain", temperature=0.0)
    return generate(bundle, trace.prompt, config, replay=True).token_ids


def teacher_forced(bundle: ModelBundle, prompt_ids: list[int], output_ids: list[int]) -> tuple[float, float]:
    """(agreement, mean NLL) of the full model over `output_ids` following `prompt_ids`."""
    if not output_ids:
        return 1.0, 0.0
    verifier = bundle.verifier
    scorer = Scorer("full", verifier.model, resolve_route("full", verifier.model.config), bundle.memo,
                    f"{verifier.name}|{verifier.dtype}")
    sequence = prompt_ids + output_ids
    logits, _ = scorer.predict(sequence, len(prompt_ids), len(sequence) - 1)
    stacked = torch.stack([x.float().cpu() for x in logits])
    targets = torch.tensor(output_ids)
    agreement = float((stacked.argmax(-1) == targets).float().mean())
    nll = float(torch.nn.functional.cross_entropy(stacked, targets))
    return agreement, nll


def expectations_for(prompt: str) -> Expectations | None:
    """The expectations an example prompt carries (None for prompts typed by hand or without any)."""
    from examples import expectations_for as lookup  # examples are data; core only reads them here

    return lookup(prompt)


def attach_fidelity(bundle: ModelBundle, trace: Trace, reference: list[int] | None = None,
                    expectations: Expectations | None = None) -> Fidelity:
    """Measure and store `trace.fidelity`; pass `reference` when the plain run is already at hand.

    `expectations` default to those of the example prompt with the trace's exact text, if any."""
    if reference is None:
        reference = reference_continuation(bundle, trace)
    output = trace.token_ids
    common = 0
    while common < min(len(output), len(reference)) and output[common] == reference[common]:
        common += 1
    tokenizer = bundle.verifier.tokenizer
    prompt_ids = encode_prompt(tokenizer, trace.prompt, trace.config.get("chat_template", True))
    agreement, nll = teacher_forced(bundle, prompt_ids, output)
    output_text = tokenizer.decode(output, skip_special_tokens=True)
    reference_text = tokenizer.decode(reference, skip_special_tokens=True)
    diff = word_diff(output_text, reference_text, getattr(tokenizer, "all_special_tokens", ()))
    if expectations is None:
        expectations = expectations_for(trace.prompt)
    checks = expectations.check(output_text) if expectations else []
    for check, on_reference in zip(checks, expectations.check(reference_text) if expectations else [], strict=True):
        check.full_met = on_reference.met
    trace.fidelity = Fidelity(reference_tokens=len(reference), common_prefix=common,
                              identical=output == reference, full_agreement=agreement, full_nll=nll,
                              words_differing=diff.words_differing, word_edits=diff.edits,
                              output_words=diff.output_words, reference_words=diff.reference_words,
                              differing_spans=list(diff.spans), expectations=checks)
    return trace.fidelity
