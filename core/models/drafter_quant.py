"""A cheaper drafter as a loading option: weights in int8 or int4, an output head restricted to likely tokens.

Why the drafter and never the verifier: the verifier defines the output (it stays the full model in its own
dtype); a drafter's tokens are only proposals, each verified or audited, so quantising it cannot change greedy
output under exact verification, only how often its drafts are right and what one costs. On this CPU the 0.5B
drafter in bf16 costs 0.385 of a 1.5B pass, which bounds what VIA-SD's tier 1 can save (README).

A setting is `WEIGHTS[+vocab[N]]`: WEIGHTS is none, int8 or int4 (weight-only: core/models/quantised.py) or w8a8
(int8 weights and int8 activations per token: core/models/int8_linear.py, the int8 verifier's layer; on a CPU
without native bf16 it is the fast one, where int4 weights in float32 are slower than float32 itself); `+vocab`
restricts the output head to the ids below N (default VOCAB_TOP) plus the special tokens and the text's own tokens,
with the full head where it is unsure (core/models/restricted_head.py). `load_bundle(..., drafter_quant=...)` and
`--drafter-quant` take it; `quantise` applies it to a loaded model in place, after `check` found the kernels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from torch import nn

from core.errors import ModelLoadError, shown
from core.models.int8_linear import PerTokenInt8Linear
from core.models.quantised import WeightOnlyLinear, kernel_error
from core.models.restricted_head import RestrictedHead, install, static_ids
from core.models.routed_layers import decoder_layers

DRAFTER_QUANTS = {
    "none": "the drafter's own weights, in the verifier's dtype",
    "int8": "int8 weights (one scale per row); activations in the verifier's dtype",
    "int4": "int4 weights (a scale and zero per 64 inputs); activations in the verifier's dtype",
    "int4+vocab": "int4 weights and a head over frequent and in-text tokens (the full head when unsure)",
    "w8a8": "int8 weights and int8 activations per token: integer products (a CPU without native bf16)",
}
"""The settings offered by name (the Models panel, --help); any WEIGHTS[+vocab[N]] is accepted."""
VOCAB_TOP = 32768
"""Static rows of a restricted head: ids below this (README: 8192 and 16384 were measured too)."""
BITS = {"none": None, "int8": 8, "int4": 4, "w8a8": 8}
_SPEC = re.compile(r"^(none|int8|int4|w8a8)(\+vocab(\d+)?)?$")


@dataclass(frozen=True)
class DrafterQuant:
    """A parsed drafter setting: weight bits (None: unquantised) and the restricted head's size (None: full)."""

    weights: str = "none"
    vocab_top: int | None = None

    @classmethod
    def parse(cls, spec: str | None) -> DrafterQuant:
        text = (spec or "none").strip().lower() if isinstance(spec, str) or spec is None else None
        found = _SPEC.match(text) if text is not None else None
        if found is None:
            raise ModelLoadError(f"unknown drafter quantisation {shown(spec)!r}: use {', '.join(DRAFTER_QUANTS)} "
                                 "(or WEIGHTS+vocabN, e.g. int4+vocab16384)")
        top = int(found.group(3)) if found.group(3) else VOCAB_TOP if found.group(2) else None
        if top is not None and top < 8:
            raise ModelLoadError(f"a restricted head needs at least 8 static rows, not {top} (e.g. int4, int8 or "
                                 "int4+vocab16384)")
        return cls(found.group(1), top)

    @property
    def name(self) -> str:
        """The canonical spelling (what traces, profiles and the memo key carry)."""
        if self.vocab_top is None:
            return self.weights
        return f"{self.weights}+vocab" + ("" if self.vocab_top == VOCAB_TOP else str(self.vocab_top))

    @property
    def bits(self) -> int | None:
        return BITS[self.weights]

    @property
    def is_none(self) -> bool:
        return self.weights == "none" and self.vocab_top is None


def supported(device: torch.device, dtype: torch.dtype) -> list[str]:
    """The named settings whose kernels run on `device` in `dtype` (probed with a tiny product)."""
    return [name for name in DRAFTER_QUANTS if kernel_problem(DrafterQuant.parse(name), device, dtype) is None]


def kernel_problem(quant: DrafterQuant, device: torch.device, dtype: torch.dtype) -> str | None:
    """Why `quant` cannot run here (None: it can). A restricted head gathers int8 rows, so it needs int8 too."""
    if quant.weights == "w8a8" and device.type != "cpu":
        return f"w8a8 runs on a CPU (fbgemm), not on {device.type}"
    if quant.weights == "w8a8" and quant.vocab_top is None:
        return None
    needed = {quant.bits} | ({8} if quant.vocab_top is not None and quant.bits is not None else set())
    for bits in sorted(b for b in needed if b is not None):
        problem = kernel_error(bits, device, dtype)
        if problem is not None:
            return f"int{bits} weights: {problem}"
    return None


def check(spec: str | None, device: torch.device, dtype: torch.dtype) -> DrafterQuant:
    """The parsed setting, or one ModelLoadError naming what this device and dtype do support."""
    quant = DrafterQuant.parse(spec)
    problem = kernel_problem(quant, device, dtype)
    if problem is not None:
        here = ", ".join(supported(device, dtype))
        raise ModelLoadError(f"drafter quantisation '{quant.name}' cannot run on {device.type} in "
                             f"{str(dtype).replace('torch.', '')} ({problem}); supported here: {here}")
    return quant


def decoder_linears(model: nn.Module) -> list[tuple[nn.Module, str, nn.Linear]]:
    """Every nn.Linear inside the decoder layers, as (parent, attribute, layer)."""
    found = []
    for layer in decoder_layers(model):
        for parent in layer.modules():
            found.extend((parent, name, child) for name, child in parent.named_children()
                         if isinstance(child, nn.Linear))
    return found


def _quantised(linear: nn.Linear, bits: int | str | None) -> nn.Module:
    """`linear` in `bits` (unchanged when None, or when int4 cannot pack its width); "w8a8": per-token int8."""
    if bits == "w8a8":
        return PerTokenInt8Linear(linear)
    if bits is None:
        return linear
    try:
        return WeightOnlyLinear(linear, bits)
    except ValueError:
        return linear


def _restricted(model: nn.Module, head: nn.Linear, quant: DrafterQuant, special: set[int]) -> RestrictedHead:
    vocab = head.out_features
    ids = static_ids(quant.vocab_top, vocab, special)
    rows = nn.Linear(head.in_features, len(ids), bias=False, device=head.weight.device, dtype=head.weight.dtype)
    with torch.no_grad():
        rows.weight.copy_(head.weight.detach().index_select(0, ids.to(head.weight.device)))
    full = _quantised(head, 8 if quant.bits is not None else None)  # gathered per pass: unquantised or int8
    fallback = _quantised(head, 4) if quant.bits == 4 else None  # an unsure row reads 68 MB, not 136 (the 0.5B)
    static = _quantised(rows, quant.bits)
    if quant.weights == "w8a8":  # integer products for the static rows and the unsure ones; gathers stay int8
        static, fallback = PerTokenInt8Linear(rows), PerTokenInt8Linear(head)
    return RestrictedHead(full, static, ids.to(head.weight.device), vocab, fallback=fallback)


def quantise(model: nn.Module, quant: DrafterQuant, special: set[int]) -> nn.Module:
    """Apply `quant` to `model` in place: every replacement is built first, then swapped in, so a failure leaves
    the model as it was. `special`: token ids a restricted head always scores (stop and special tokens)."""
    if quant.is_none:
        return model
    head = model.get_output_embeddings()
    if not isinstance(head, nn.Linear):
        raise ModelLoadError(f"cannot quantise a drafter whose output head is a {type(head).__name__}")
    params = sum(p.numel() for p in model.parameters())
    bits = "w8a8" if quant.weights == "w8a8" else quant.bits
    swaps = [(parent, name, _quantised(linear, bits)) for parent, name, linear in decoder_linears(model)]
    new_head = (_restricted(model, head, quant, special) if quant.vocab_top is not None
                else _quantised(head, bits))
    for parent, name, module in swaps:
        setattr(parent, name, module)
    if isinstance(new_head, RestrictedHead):
        install(model, new_head)
    else:
        if bits == "w8a8" and getattr(model.config, "tie_word_embeddings", False):
            model.config.tie_word_embeddings = False  # the embedding keeps its float rows; only the head is int8
        model.set_output_embeddings(new_head)
    model.viasd_quant = (quant.name, params)  # read by cost_profiles.model_signature: same shape, other costs
    return model


def quant_of(model: nn.Module) -> tuple[str, int] | None:
    """(setting, parameters before quantising) of a quantised drafter, None for any other model."""
    return getattr(model, "viasd_quant", None)


def fallback_share(model: nn.Module) -> float | None:
    """Share of drafted rows a restricted head handed to the full head so far (None: no restricted head)."""
    head = model.get_output_embeddings()
    if not isinstance(head, RestrictedHead) or not head.rows:
        return None
    return head.fallbacks / head.rows
