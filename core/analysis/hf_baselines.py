"""Hugging Face's own decoders as baselines: one timed `generate`, and the fidelity of an output we hold no trace of.

Every benchmark (core/tools/benchmark.py, core/tools/grounded_bench.py, core/tools/pair_bench.py) times Hugging
Face through `hf_generate`, so all of them synchronise CUDA before reading the clock (core.decoding.timing), use
the same stop tokens as our engine and decode greedily with sampling knobs unset.
Assisted generation reads its draft-length settings from the *assistant's* generation config
(transformers' `AssistedCandidateGenerator`: 20 tokens, constant schedule, confidence threshold 0.4 by default);
`assistant_settings` changes them for one call and puts them back, so "its defaults" and "a fixed gamma" are both
one call away.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from core.analysis.expectations import Expectations
from core.analysis.textdiff import word_diff
from core.decoding.timing import Stopwatch
from core.models.loading import ModelBundle
from core.models.prompting import stop_token_ids


def hf_generate(bundle: ModelBundle, prompt_ids: list[int], max_new_tokens: int,
                **kwargs: object) -> tuple[list[int], float]:
    """Hugging Face `generate`, greedy, timed like ours (CUDA synchronised); returns (new ids, seconds).

    `kwargs` go to `generate` (e.g. `prompt_lookup_num_tokens=10`, `assistant_model=...`)."""
    model = bundle.verifier.model
    ids = torch.tensor([prompt_ids], device=bundle.verifier.device)
    stop = sorted(stop_token_ids(model, bundle.verifier.tokenizer))
    with torch.inference_mode(), Stopwatch(bundle.verifier.device) as watch:
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, temperature=None, top_p=None, top_k=None, eos_token_id=stop,
                             pad_token_id=stop[0], **kwargs)
    return out[0, len(prompt_ids):].tolist(), watch.seconds


@contextlib.contextmanager
def assistant_settings(assistant: torch.nn.Module, **values: object) -> Iterator[None]:
    """Set attributes of the assistant's generation config for one `generate` call, then restore them."""
    config = assistant.generation_config
    saved = {name: getattr(config, name, None) for name in values}
    for name, value in values.items():
        setattr(config, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(config, name, value)


def hf_assisted(bundle: ModelBundle, prompt_ids: list[int], max_new_tokens: int,
                gamma: int | None = None) -> tuple[list[int], float]:
    """HF assisted generation with the bundle's drafter: its defaults (`gamma` None), or exactly `gamma` draft
    tokens per round (constant schedule, no confidence cut-off), as classic SD drafts."""
    if bundle.drafter is None:
        raise ValueError("HF assisted generation needs a separate drafter model in the bundle")
    assistant = bundle.drafter.model
    fixed = {} if gamma is None else {"num_assistant_tokens": gamma, "num_assistant_tokens_schedule": "constant",
                                      "assistant_confidence_threshold": 0.0}
    with assistant_settings(assistant, **fixed):
        return hf_generate(bundle, prompt_ids, max_new_tokens, assistant_model=assistant)


def reader_fidelity(bundle: ModelBundle, ids: list[int], reference: list[int],
                    expectations: Expectations | None) -> dict:
    """Words differing from `reference` and expectations met, read from the text alone (no model pass).

    Returns {"words_differing", "expectations": (met, total) or None, "kept": bool or None (every expectation
    the reference meets is met too), "answer": bool or None (the final answer check, math prompts)}."""
    tokenizer = bundle.verifier.tokenizer
    text, ref = tokenizer.decode(ids, skip_special_tokens=True), tokenizer.decode(reference, skip_special_tokens=True)
    out: dict = {"words_differing": word_diff(text, ref, getattr(tokenizer, "all_special_tokens", ())).words_differing,
                 "expectations": None, "kept": None, "answer": None}
    if expectations is not None and len(expectations):
        checks, on_reference = expectations.check(text), expectations.check(ref)
        out["expectations"] = (sum(bool(c.met) for c in checks), len(checks))
        out["kept"] = all(c.met or not r.met for c, r in zip(checks, on_reference, strict=True))
        if expectations.answer is not None:
            out["answer"] = bool(checks[-1].met)
    return out
