"""The verifier's precision beyond its dtype: "none" (its own weights, the full-precision reference) or "int8"
(int8 weights per output row and int8 activations per token: core/models/int8_linear.py).

Why the verifier may be quantised at all: the verifier defines the output, so a quantised verifier is another
model, and what that changes is measured as numerics against the full-precision one (teacher-forced top-1
agreement, words differing), apart from the tiers. What must not change is exactness within the precision:
plain, classic SD and VIA-SD at tau 1.0 / 1.0 give the same tokens. That holds because the int8 layer is
batch-invariant (a token's logits do not depend on the other tokens of its verification pass).

"auto" asks core.models.precision.recommend for this machine's choice. `quantise_verifier` applies a setting to
a loaded model in place, model-load level only: the decoding loop never knows.
"""

from __future__ import annotations

import torch
from torch import nn

from core.errors import ModelLoadError, shown
from core.models.drafter_quant import decoder_linears
from core.models.int8_linear import PerTokenInt8Linear
from core.models.precision import recommend
from core.models.row_attention import use_row_attention

VERIFIER_QUANTS = {
    "none": "the model's own weights in its dtype (the full-precision reference)",
    "int8": "int8 weights per row, int8 activations per token: integer products, batch-invariant",
    "auto": "what this machine computes fastest (core.models.precision.recommend)",
}
"""The settings `--verifier-quant` and `load_bundle(verifier_quant=)` accept."""
SIGNATURE = {"int8": "w8a8"}
"""The suffix a cost profile's model signature gets (`w8a8`, so it never reads as the drafter's weight-only int8)."""


def parse(spec: str | None) -> str:
    """The canonical setting, or one ModelLoadError line naming the accepted ones."""
    text = (spec or "none").strip().lower() if isinstance(spec, str) or spec is None else None
    if text not in VERIFIER_QUANTS:
        raise ModelLoadError(f"unknown verifier quantisation {shown(spec)!r}: use {', '.join(VERIFIER_QUANTS)}")
    return text


def quantise_verifier(model: nn.Module, setting: str) -> nn.Module:
    """Apply a resolved setting ("none" or "int8") in place: every decoder-layer linear and the output head
    become `PerTokenInt8Linear` (built first, then swapped in, so a failure leaves the model as it was).
    The embeddings, norms and attention keep the model's dtype."""
    if setting == "none":
        return model
    if setting != "int8":
        raise ModelLoadError(f"verifier quantisation '{setting}' is not a resolved setting (none or int8)")
    if model.device.type != "cpu":
        raise ModelLoadError(f"int8 verifier layers run on a CPU (fbgemm), not on {model.device.type}")
    head = model.get_output_embeddings()
    if not isinstance(head, nn.Linear):
        raise ModelLoadError(f"cannot quantise a verifier whose output head is a {type(head).__name__}")
    params = sum(p.numel() for p in model.parameters())
    swaps = [(parent, name, PerTokenInt8Linear(linear)) for parent, name, linear in decoder_linears(model)]
    new_head = PerTokenInt8Linear(head)
    for parent, name, module in swaps:
        setattr(parent, name, module)
    if head is model.get_input_embeddings() or getattr(model.config, "tie_word_embeddings", False):
        model.config.tie_word_embeddings = False  # the embedding keeps its float rows; only the head is int8
    model.set_output_embeddings(new_head)
    use_row_attention(model)  # attention is the one other step a token's result could depend on its batch in
    model.viasd_quant = (SIGNATURE[setting], params)  # cost_profiles.model_signature: same shape, other costs
    return model



def resolve(spec: str | None, device: torch.device, dtype_asked: str | None, default_dtype: str) -> str:
    """The setting a load means: the one asked for ("auto": this machine's recommendation), else, when neither
    a dtype nor a setting was asked and the model's own default precision is "auto" (the pair presets), the
    recommendation too; else "none" (SmolLM2 and Hub ids keep their float32 reference)."""
    setting = parse(spec) if spec is not None else ("auto" if dtype_asked is None and default_dtype == "auto"
                                                     else "none")
    return recommend(device).verifier_quant if setting == "auto" else setting
