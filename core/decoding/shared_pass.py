"""One forward pass for several runs' scorers of one model and route: their rows share one read of the weights.

Why: on a CPU a pass over one or a few new tokens is bound by reading the weights, so the passes of several
runs (grid points computed together, core.sweeps.together) cost little more than one when their tokens go
through the linear layers as one batch. Attention is the one step where rows of different runs must not meet:
each run attends over its own KV cache, with the call (shapes and mask) its own pass would make, so only the
linear layers see the batch.

How: the runs' new tokens are packed into one sequence, each run a span of it with its own positions (no padding:
the linear layers see exactly the rows the runs' own passes would, and only the wanted rows reach the output
head). `SharedCache` stands in for the KV cache: each layer's new keys and values of a span go to that run's own
cache, and it hands the attention the runs' own keys and values. The model runs with the attention function
`viasd_shared` (no mask is built for the packed sequence), which calls the model's own attention function once
per run with the mask that run's own pass builds.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from transformers import AttentionInterface
from transformers.masking_utils import create_causal_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from core.models.restricted_head import RestrictedHead
from core.models.routed_layers import routed

NAME = "viasd_shared"
SHARED_PASSES: contextvars.ContextVar[object | None] = contextvars.ContextVar("shared_passes", default=None)
"""Where a scorer sends its passes when its run is computed together with others (core.sweeps.together);
None: it runs them itself."""
CHECKED_FAMILIES = frozenset({"llama", "qwen2", "qwen3", "mistral"})
"""Model families whose decoder layers are known to hand the cache's keys and values straight to attention
(tests/decoding/test_shared_pass.py); others run their passes one by one."""


@dataclass
class Request:
    """One scorer's pass: the logits of rows first..last of `tokens` (Scorer.predict's arguments)."""

    scorer: object
    tokens: list[int]
    first: int
    last: int


@dataclass
class _Run:
    """One run inside the packed pass: its own cache, its span of rows and the mask its own pass would get."""

    cache: object
    start: int
    stop: int
    mask: torch.Tensor | None


class _PerRun(list):
    """The keys (or values) of every run of a batch at one layer, each over its own cache."""


class SharedCache:
    """The packed pass's stand-in for a KV cache: a layer's new keys and values of a run's span go to its own cache."""

    def __init__(self, runs: list[_Run]) -> None:
        self.runs = runs

    def update(self, keys: torch.Tensor, values: torch.Tensor, layer_idx: int, *args: object,
               **kwargs: object) -> tuple[_PerRun, _PerRun]:
        all_keys, all_values = _PerRun(), _PerRun()
        for run in self.runs:
            k, v = run.cache.update(keys[:, :, run.start:run.stop], values[:, :, run.start:run.stop], layer_idx)
            all_keys.append(k)
            all_values.append(v)
        return all_keys, all_values


_BATCH: contextvars.ContextVar[tuple[list[_Run], object] | None] = contextvars.ContextVar("shared_batch",
                                                                                          default=None)


def shared_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: _PerRun, value: _PerRun,
                             attention_mask: object, **kwargs: object) -> tuple[torch.Tensor, None]:
    """transformers' attention signature over packed runs: each run's rows attend over its own keys with its own
    mask, through the model's own attention function; (1, rows, heads, dim) back, the spans in order."""
    runs, attention = _BATCH.get()
    outputs = []
    for b, run in enumerate(runs):
        out, _ = attention(module, query[:, :, run.start:run.stop], key[b], value[b], run.mask, **kwargs)
        outputs.append(out)
    return torch.cat(outputs, dim=1), None


def can_share(model: torch.nn.Module) -> bool:
    """Whether runs may share this model's passes: a checked family, every layer attending to the full history (a
    sliding window's mask is not built here), and no restricted output head (it tracks the text's tokens from the
    pass's input ids, which a packed pass would mix)."""
    config = model.config
    full_only = set(getattr(config, "layer_types", None) or ["full_attention"]) == {"full_attention"} and not (
        config.model_type == "mistral" and getattr(config, "sliding_window", None))
    return (config.model_type in CHECKED_FAMILIES and full_only
            and not isinstance(model.get_output_embeddings(), RestrictedHead))


def _mask(model: torch.nn.Module, cache: object, rows: int, positions: torch.Tensor) -> torch.Tensor | None:
    """The mask the model builds for one run's own pass of `rows` new tokens over `cache` (the same call)."""
    dtype = model.get_input_embeddings().weight.dtype  # what the model's own embeddings are (a quantised drafter's
    embeds = torch.empty(1, rows, 1, dtype=dtype, device=positions.device)  # linears aside); shape, dtype, device
    args = dict(config=model.config, inputs_embeds=embeds, attention_mask=None, cache=cache, position_ids=positions)
    return create_causal_mask(**args)


@contextlib.contextmanager
def _attention_switched(model: torch.nn.Module) -> Iterator[object]:
    """The model attends through `viasd_shared` for one pass; yields its own attention function."""
    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, shared_attention_forward)
    own = model.config._attn_implementation
    model.config._attn_implementation = NAME
    try:
        yield ALL_ATTENTION_FUNCTIONS[own]
    finally:
        model.config._attn_implementation = own


@torch.inference_mode()
def forward_together(requests: list[Request]) -> list[torch.Tensor]:
    """The logits each request asks for (Scorer.predict's rows, the model's dtype), all scorers of one model and
    route in one pass. Each scorer's KV cache advances as its own pass would have advanced it."""
    first = requests[0].scorer
    if len(requests) == 1 or not can_share(first.model):
        return [r.scorer.forward(r.tokens, r.first, r.last) for r in requests]
    ids: list[int] = []
    positions: list[int] = []
    runs, kept = [], []
    for r in requests:
        keep = r.scorer.prepare(r.tokens, r.first, r.last)
        start = len(ids)
        ids += r.tokens[keep:r.last]
        positions += range(keep, r.last)
        own = torch.arange(keep, r.last, device=first.device).unsqueeze(0)
        runs.append(_Run(r.scorer.cache, start, len(ids), _mask(first.model, r.scorer.cache, r.last - keep, own)))
        kept += range(len(ids) - (r.last - r.first + 1), len(ids))  # its wanted rows: the last of its span
    with _attention_switched(first.model) as attention, routed(first.route):
        token = _BATCH.set((runs, attention))
        try:
            out = first.model(input_ids=torch.tensor([ids], device=first.device),
                              position_ids=torch.tensor([positions], device=first.device), cache=SharedCache(runs),
                              use_cache=True, logits_to_keep=torch.tensor(kept, device=first.device))
        finally:
            _BATCH.reset(token)
    for r in requests:
        r.scorer.took(r.tokens, r.last)
    return list(out.logits[0].split([r.last - r.first + 1 for r in requests]))
