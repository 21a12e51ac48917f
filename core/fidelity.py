"""Fidelity: how far tiers 1 and 2 moved the output away from the full model's own output.

Two views, both measured against the full verifier:
* the full model's own greedy continuation of the same prompt (the reference): common prefix
  length and exact identity;
* teacher-forced, in one batched pass over prompt + output: the share of output tokens that are
  the full model's argmax given the output so far (`full_agreement`), and its mean negative
  log-likelihood of the output in nats per token (`full_nll`).
"""

from __future__ import annotations

import torch

from core.config import DecodeConfig
from core.engine import encode_prompt, generate
from core.models import ModelBundle
from core.routing import resolve_route
from core.scorer import Scorer
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


def attach_fidelity(bundle: ModelBundle, trace: Trace, reference: list[int] | None = None) -> Fidelity:
    """Measure and store `trace.fidelity`; pass `reference` when the plain run is already at hand."""
    if reference is None:
        reference = reference_continuation(bundle, trace)
    output = trace.token_ids
    common = 0
    while common < min(len(output), len(reference)) and output[common] == reference[common]:
        common += 1
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, trace.prompt, trace.config.get("chat_template", True))
    agreement, nll = teacher_forced(bundle, prompt_ids, output)
    trace.fidelity = Fidelity(reference_tokens=len(reference), common_prefix=common,
                              identical=output == reference, full_agreement=agreement, full_nll=nll)
    return trace.fidelity
