"""The full model's own greedy answer by the fastest exact method at hand, reusing what a run already computed.

Words differing compares a run with the full model's plain greedy continuation (core.analysis.fidelity). Decoded
plainly, that reference costs one verifier pass per token after every run. It need not:
* a plain run, or in exact arithmetic a classic-SD run, *is* the reference (both are lossless);
* in exact arithmetic (float32, float64) classic SD with the run's own drafter yields the same tokens as plain
  greedy in fewer verifier passes, and with the prediction memo it reads back every prefix the run's full verifier
  already scored and every draft the run's drafter already made: only the prefixes the run never showed the full
  model cost a pass;
* in reduced precision a k-token pass rounds differently from k one-token passes, so neither shortcut is exact:
  the reference is decoded plainly, one token per pass, as before, and numerics stay apart from tiers
  (`core.analysis.fidelity.separate_numerics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.analysis.fidelity import greedy_reference
from core.decoding.engine import encode_prompt, generate
from core.models.loading import ModelBundle
from core.trace import Trace

EXACT_DTYPES = (torch.float32, torch.float64)
"""Where a batched verifier pass decides exactly as one-token passes do (classic SD is lossless)."""


@dataclass(frozen=True)
class Reference:
    """The reference's tokens and how they were obtained (`method`: "the run itself", "classic SD", "plain")."""

    tokens: list[int]
    method: str

    @property
    def plain(self) -> bool:
        """Decoded one token per pass, every pass run: its wall time is plain decoding's."""
        return self.method == "plain"


def exact_arithmetic(bundle: ModelBundle) -> bool:
    return next(bundle.verifier.model.parameters()).dtype in EXACT_DTYPES


def _run_is_reference(trace: Trace, exact: bool) -> bool:
    """A finished greedy plain run (any dtype: it decodes one token per pass), or classic SD in exact arithmetic."""
    config = trace.config
    return config.greedy and not trace.partial and trace.stop_reason != "running" and (
        config.mode == "plain" or (config.mode == "sd" and exact))


def classic_sd_twin(bundle: ModelBundle, trace: Trace) -> list[int] | None:
    """The run's tiers-off twin: classic SD with its drafter, greedy, replaying what the run computed (cheap). In
    exact arithmetic it is the reference itself; in reduced precision it differs from plain greedy by numerics
    only, so comparing the run with it measures what the tiers changed. None for a run that is not VIA-SD."""
    config = trace.config
    if config.mode != "via" or not config.greedy:
        return None
    sd = generate(bundle, trace.prompt, config.with_(mode="sd"), replay=True)
    return None if sd.partial else list(sd.token_ids)


def exact_reference(bundle: ModelBundle, trace: Trace, use_memo: bool = True) -> Reference:
    """The full model's plain greedy continuation of `trace`'s prompt up to its length cap, token for token, by the
    cheapest exact method (see the module docstring). `use_memo=False` decodes plainly with the memo bypassed."""
    exact = exact_arithmetic(bundle)
    if use_memo and _run_is_reference(trace, exact):
        return Reference(list(trace.token_ids), "the run itself")
    config = trace.config
    if use_memo and exact and config.mode != "plain":  # the same drafter, tiers off, greedy: lossless here
        sd = generate(bundle, trace.prompt, config.with_(mode="sd", temperature=0.0), replay=True)
        if not sd.partial:
            return Reference(list(sd.token_ids), "classic SD")
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, trace.prompt, config.chat_template)
    return Reference(greedy_reference(bundle, prompt_ids, config.max_new_tokens, use_memo=False), "plain")
