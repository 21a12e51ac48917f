"""A batch-invariant int8 linear layer: int8 weights per output row, int8 activations per token (per row).

Why: on a CPU without native bf16 the verifier runs in float32, and a verification pass of several tokens is
compute-bound there (a pass of 8 tokens costs 2-3x a one-token pass), so speculative decoding loses to plain
decoding. An integer product is cheap on every x86 CPU since AVX2.

Why per token: torch's dynamic int8 linear (`quantize_dynamic`) scales the activations of the whole tensor by
one number, so a token's logits change with the other tokens of its verification pass, and classic SD at
tau 1.0 would no longer reproduce plain greedy decoding. Here each row gets its own scale, the product is
accumulated in integers (exact: the sum does not depend on how the kernel blocks the other rows), and every
float step after it is elementwise. A row's output is therefore bit-identical alone or inside any batch; the
precision changes the model (measured as numerics against full precision), never the exactness of decoding.

Kernel: fbgemm's `quantized.linear_with_input_q_dq_qweight_dq_output_fp32`, fed the already-quantised rows as
integer-valued floats with scale 1, so its own per-tensor quantisation is the identity. On x86 without VNNI its
inner step adds two u8 x s8 products in int16 and saturates; there activations use 7 bits (`act_max` 63 with
zero point 64), which keeps every pair below 2^15. `torch._int_mm` is the fallback where fbgemm is missing.
"""

from __future__ import annotations

import os
import warnings

import torch
from torch import nn

from core.models.precision import cpu_flags

VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
"""/proc/cpuinfo flags of x86 int8 dot products that accumulate u8 x s8 in 32 bits (no int16 saturation)."""


def int8_without_saturation(flags: frozenset[str] | None = None) -> bool:
    """Can activations use all 8 bits? Only where fbgemm's int8 dot product is VNNI (it honours
    FBGEMM_ENABLE_INSTRUCTIONS, which emulates an older CPU, so that setting counts too)."""
    forced = os.environ.get("FBGEMM_ENABLE_INSTRUCTIONS", "").upper()
    if forced:
        return "VNNI" in forced
    flags = cpu_flags() if flags is None else flags
    return bool(flags and VNNI_FLAGS & flags)


def fbgemm_available() -> bool:
    return "fbgemm" in torch.backends.quantized.supported_engines or "x86" in torch.backends.quantized.supported_engines


class PerTokenInt8Linear(nn.Module):
    """`nn.Linear` with int8 weights (one scale per output row) and int8 activations (one scale per row).

    Forward takes and returns the activations' own dtype (the product itself runs in integers, its scaling in
    float32). `act_max`: 127 (8 bits) or 63 (7 bits, where the kernel would saturate; see the module doc)."""

    def __init__(self, linear: nn.Linear, act_max: int | None = None, kernel: str | None = None) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.logical_params = weight.numel()
        self.act_max = act_max or (127 if int8_without_saturation() else 63)
        self.kernel = kernel or ("fbgemm" if fbgemm_available() else "int_mm")
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float().clone())
        scale = weight.abs().amax(dim=1).clamp(min=1e-8) / 127
        self.register_buffer("wscale", scale)
        qweight = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8)
        if self.kernel == "fbgemm":
            with warnings.catch_warnings():  # torch marks its quantised tensors deprecated; the kernel is current
                warnings.simplefilter("ignore")
                qw = torch._make_per_channel_quantized_tensor(qweight, scale.double(),
                                                              torch.zeros_like(scale, dtype=torch.long), 0)
                self._packed = torch.ops.quantized.linear_prepack(qw, None)
            self.packed_bytes = qweight.numel()
        elif self.kernel == "int_mm":
            self.register_buffer("qweight_t", qweight.t().contiguous())
            self.packed_bytes = qweight.numel()
        else:
            raise ValueError(f"unknown int8 kernel '{kernel}': use fbgemm or int_mm")

    @property
    def weight(self) -> torch.Tensor:
        """The weight's shape only (a meta tensor: readers that ask an output head its vocabulary size work;
        reading its values fails loudly, as they live packed in int8)."""
        return torch.empty(self.out_features, self.in_features, device="meta")

    @property
    def pass_bytes(self) -> int:
        """Bytes one pass reads: the int8 weight, its scales and the bias (`quantised.weight_bytes` asks)."""
        extra = self.wscale.numel() * 4 + (0 if self.bias is None else self.bias.numel() * 4)
        return self.packed_bytes + extra

    def quantise_rows(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(integer-valued rows, one float32 scale per row): max|row| maps to `act_max`; a zero row stays zero."""
        scale = x.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / self.act_max
        return torch.round(x / scale).clamp(-self.act_max, self.act_max), scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).float()
        q, scale = self.quantise_rows(flat)
        if self.kernel == "fbgemm":
            zero = self.act_max + 1  # u8 = q + zero: 1..255 (8 bits) or 1..127 (7 bits)
            out = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(q, 1.0, zero, self._packed)
        else:
            out = torch._int_mm(q.to(torch.int8), self.qweight_t).float() * self.wscale
        out = out * scale
        if self.bias is not None:
            out = out + self.bias
        return out.to(x.dtype).reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        bits = 8 if self.act_max == 127 else 7
        return (f"in_features={self.in_features}, out_features={self.out_features}, int8 weights, "
                f"int{bits} activations per token, {self.kernel}")
