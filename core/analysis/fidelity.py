"""Fidelity: how far tiers 1 and 2 moved the output away from the full model's own output.

Two views, both measured against the full verifier:
* the full model's own greedy continuation of the same prompt (the reference): common prefix
  length and exact identity. It is decoded here by a plain greedy loop of its own, not by the
  engine under test, and can bypass the prediction memo (`use_memo=False`) so a test's reference
  never reads back what the run it checks has written;
* teacher-forced, in one batched pass over prompt + output: the share of output tokens that are
  the full model's argmax given the output so far (`full_agreement`), and its mean negative
  log-likelihood of the output in nats per token (`full_nll`);
* numerics apart from tiers (`separate_numerics`): in bf16 scoring k tokens in one pass rounds
  differently from one at a time, so even classic SD (lossless in exact arithmetic) drifts from plain
  greedy. "numerics" is classic SD's own words differing from plain greedy with the same drafter and
  dtype; "tiers" is what a run differs beyond that (`Fidelity.tiers_words`);
* as a reader: the share of words that differ from the reference text (core.analysis.textdiff, special
  tokens never count) with the differing spans, and, for prompts that carry expectations
  (core.analysis.expectations; the grounded examples do), each expectation checked on this output and on
  the reference, so "did the task get done" is judged against what the full model itself did.
"""

from __future__ import annotations

import torch

from core.analysis.expectations import Expectations
from core.analysis.textdiff import word_diff
from core.decoding.scorer import Scorer
from core.models.layer_routes import resolve_route
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt, stop_token_ids
from core.trace import Fidelity, Trace


def _full_scorer(bundle: ModelBundle, use_memo: bool, one_at_a_time: bool = False) -> Scorer:
    verifier = bundle.verifier
    route = resolve_route("full", verifier.model.config)
    name = verifier.identity  # the engine's key (name and quantisation): the run's memo rows and KV caches serve here
    if one_at_a_time and next(verifier.model.parameters()).dtype not in (torch.float32, torch.float64):
        # In bf16 a k-token pass rounds differently from k one-token passes: the reference must not read back
        # the run's own batched verdicts from the memo, or every lossless run would look identical to it.
        name += " (one token at a time)"
    return Scorer("full", verifier.model, route, bundle.memo if use_memo else None, name)


def greedy_reference(bundle: ModelBundle, prompt_ids: list[int], max_new_tokens: int,
                     use_memo: bool = True) -> list[int]:
    """The full model's plain greedy continuation of `prompt_ids`, up to a stop token or the cap: one token per
    pass, as plain decoding computes it (memoised apart from batched passes in reduced precision)."""
    scorer = _full_scorer(bundle, use_memo, one_at_a_time=True)
    stops = stop_token_ids(bundle.verifier.model, bundle.verifier.tokenizer)
    tokens = list(prompt_ids)
    while len(tokens) - len(prompt_ids) < max_new_tokens:
        logits, _ = scorer.predict(tokens, len(tokens), len(tokens))
        tokens.append(int(torch.argmax(logits[0])))
        if tokens[-1] in stops:
            break
    return tokens[len(prompt_ids):]


def _prompt_ids(bundle: ModelBundle, trace: Trace) -> list[int]:
    return encode_prompt(bundle.verifier.tokenizer, trace.prompt, trace.config.chat_template)


def reference_continuation(bundle: ModelBundle, trace: Trace, use_memo: bool = True) -> list[int]:
    """The full model's plain greedy output for the trace's prompt and length."""
    return greedy_reference(bundle, _prompt_ids(bundle, trace), trace.config.max_new_tokens, use_memo)


def teacher_forced(bundle: ModelBundle, prompt_ids: list[int], output_ids: list[int],
                   use_memo: bool = True) -> tuple[float, float]:
    """(agreement, mean NLL) of the full model over `output_ids` following `prompt_ids`."""
    if not output_ids:
        return 1.0, 0.0
    sequence = prompt_ids + output_ids
    logits, _ = _full_scorer(bundle, use_memo).predict(sequence, len(prompt_ids), len(sequence) - 1)
    stacked = logits.float()
    targets = torch.tensor(output_ids, device=stacked.device)
    agreement = float((stacked.argmax(-1) == targets).float().mean())
    nll = float(torch.nn.functional.cross_entropy(stacked, targets))
    return agreement, nll


def attach_fidelity(bundle: ModelBundle, trace: Trace, reference: list[int] | None = None,
                    use_memo: bool = True, expectations: Expectations | None = None, agreement: bool = True
                    ) -> Fidelity:
    """Measure and store `trace.fidelity`; pass `reference` when the plain run is already at hand.

    `expectations` are the task's checks (an example prompt's, `examples.expectations_for`); None checks nothing.
    The caller passes them: core below core/tools never reads the examples. `agreement=False` leaves out the
    teacher-forced pass (token agreement and NLL stay None; `measure_agreement` adds them): words differing needs
    only the reference, while that pass over a text the full model never saw costs 1–2 s on two cores."""
    if reference is None:
        reference = reference_continuation(bundle, trace, use_memo)
    output = trace.token_ids
    common = 0
    while common < min(len(output), len(reference)) and output[common] == reference[common]:
        common += 1
    full_agreement, nll = (teacher_forced(bundle, _prompt_ids(bundle, trace), output, use_memo) if agreement
                           else (None, None))
    tokenizer = bundle.verifier.tokenizer
    output_text = tokenizer.decode(output, skip_special_tokens=True)
    reference_text = tokenizer.decode(reference, skip_special_tokens=True)
    diff = word_diff(output_text, reference_text, getattr(tokenizer, "all_special_tokens", ()))
    checks = expectations.check(output_text) if expectations else []
    for check, on_reference in zip(checks, expectations.check(reference_text) if expectations else [], strict=True):
        check.full_met = on_reference.met
    trace.fidelity = Fidelity(reference_tokens=len(reference), common_prefix=common,
                              identical=output == reference, full_agreement=full_agreement, full_nll=nll,
                              words_differing=diff.words_differing, word_edits=diff.edits,
                              output_words=diff.output_words, reference_words=diff.reference_words,
                              differing_spans=list(diff.spans), expectations=checks)
    return trace.fidelity


def measure_agreement(bundle: ModelBundle, fidelity: Fidelity, trace: Trace, use_memo: bool = True) -> None:
    """Add to `fidelity` (of `trace`'s text) the token agreement and NLL `attach_fidelity(agreement=False)` left out."""
    fidelity.full_agreement, fidelity.full_nll = teacher_forced(bundle, _prompt_ids(bundle, trace), trace.token_ids,
                                                                use_memo)


def separate_numerics(traces: dict[str, Trace]) -> float | None:
    """Record on every fidelity-measured trace how much of its word difference numerics explain.

    `traces` is one comparison (plain, "sd" = classic SD, "via", ...) on one prompt with one drafter and
    dtype: classic SD's own words differing from plain greedy is what rounding alone does (0 in fp32,
    where it is exact). Returns that share (None without a measured classic SD run)."""
    sd = traces.get("sd")
    if sd is None or sd.fidelity is None:
        return None
    numerics = sd.fidelity.words_differing
    for name, trace in traces.items():
        if name == "plain":  # the reference itself
            continue
        if trace.fidelity is not None and trace.models.get("dtype") == sd.models.get("dtype"):
            trace.fidelity.numerics_words = numerics
    return numerics


def numerics_split(trace: Trace | None) -> str | None:
    """'2% numerics (classic SD in bfloat16) + 5% tiers' for a card; None when not separated."""
    fidelity = getattr(trace, "fidelity", None)
    if fidelity is None or fidelity.numerics_words is None:
        return None
    dtype = trace.models.get("dtype", "this dtype")
    return f"{fidelity.numerics_words:.0%} numerics (classic SD in {dtype}) + {fidelity.tiers_words:.0%} tiers"
