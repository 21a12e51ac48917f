"""Weight-only quantised linear layers (int8, int4) on torch's own kernels, for a cheaper drafter.

Why weight-only: a decoding pass at batch size 1 is memory-bound (it streams every weight once per token), so
storing weights in 8 or 4 bits cuts what a pass reads by 2x or 4x while activations keep the model's dtype. Why
torch's own kernels (`torch._weight_int8pack_mm`, `torch._weight_int4pack_mm[_for_cpu]`, the ones gpt-fast and
torchao's CPU path call): torchao 0.18 (the newest on PyPI) dequantises int8 on this CPU (a 0.5B pass 7x slower
than bf16) and serves int4 only through CUDA libraries (README, "The drafter is the lever").

* int8: one symmetric scale per output row (q = round(w / s), s = max|w| / 127);
* int4: one scale and one zero per `group` inputs (asymmetric: w ~ (q - 8) * scale + zero), rows padded to a
  multiple of 16 for the CPU kernel's layout.

`kernel_error(bits, device, dtype)` runs a tiny product first, so a device or dtype without the kernel fails
with one line before any model is touched.
"""

from __future__ import annotations

import torch
from torch import nn

INT4_GROUP = 64
"""Inputs sharing one int4 scale and zero (gpt-fast's and torchao's usual 32-128; 64 measured on the pair)."""
_CUDA_INNER_TILES = 8


def _group_for(in_features: int, group: int) -> int | None:
    """The largest group size <= `group` (halving down to 16) that divides `in_features`, or None."""
    while group >= 16:
        if in_features % group == 0:
            return group
        group //= 2
    return None


class WeightOnlyLinear(nn.Module):
    """`nn.Linear` with int8 or int4 weights; forward takes and returns the activations' own dtype.

    The quantised weight, its scales and the bias are buffers (never trained); `weight_bytes` is what one
    pass reads, which the modelled cost counts instead of parameters."""

    def __init__(self, linear: nn.Linear, bits: int, group: int = INT4_GROUP) -> None:
        super().__init__()
        weight = linear.weight.detach()
        self.in_features, self.out_features, self.bits = linear.in_features, linear.out_features, bits
        self.logical_params = weight.numel()
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())
        if bits == 8:
            scale = weight.float().abs().amax(dim=1).clamp(min=1e-8) / 127
            self.register_buffer("qweight", torch.round(weight.float() / scale[:, None]).clamp(-127, 127)
                                 .to(torch.int8))
            self.register_buffer("scales", scale.to(weight.dtype))
            self.group = None
        elif bits == 4:
            self.group = _group_for(self.in_features, group)
            if self.group is None:
                raise ValueError(f"int4 needs the input width ({self.in_features}) divisible by 16")
            self._pack_int4(weight)
        else:
            raise ValueError(f"weight-only quantisation has 8 or 4 bits, not {bits}")

    def _pack_int4(self, weight: torch.Tensor) -> None:
        rows = -(-self.out_features // 16) * 16  # the CPU kernel's layout wants rows in blocks of 16
        w = torch.zeros(rows, self.in_features, dtype=torch.float32, device=weight.device)
        w[: self.out_features] = weight.float()
        groups = w.reshape(rows, -1, self.group)
        low, high = groups.amin(dim=-1, keepdim=True), groups.amax(dim=-1, keepdim=True)
        scale = (high - low).clamp(min=1e-6) / 15
        q = torch.round((groups - low) / scale).clamp(0, 15).to(torch.int32).reshape(rows, self.in_features)
        zero = low + 8 * scale
        self.register_buffer("scales_and_zeros", torch.cat([scale, zero], dim=-1).transpose(0, 1).contiguous()
                             .to(weight.dtype))
        if weight.device.type == "cuda":
            packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8),
                                                       _CUDA_INNER_TILES)
        else:
            packed = torch._convert_weight_to_int4pack_for_cpu(q, 1)
        self.register_buffer("qweight", packed)

    @property
    def weight_bytes(self) -> int:
        """Bytes one pass reads: the packed weight and its scales (and the bias)."""
        return sum(b.numel() * b.element_size() for b in self.buffers())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).contiguous()
        if self.bits == 8:
            out = torch._weight_int8pack_mm(flat, self.qweight, self.scales.to(flat.dtype))
        elif flat.device.type == "cuda":
            out = torch._weight_int4pack_mm(flat, self.qweight, self.group, self.scales_and_zeros)
        else:
            out = torch._weight_int4pack_mm_for_cpu(flat, self.qweight, self.group, self.scales_and_zeros)
        out = out[:, : self.out_features]
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        group = f", group={self.group}" if self.group else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, int{self.bits}{group}"


def kernel_error(bits: int, device: torch.device, dtype: torch.dtype) -> str | None:
    """None when int`bits` weights multiply `dtype` activations on `device`; else the kernel's first line."""
    try:
        with torch.device(device):
            linear = nn.Linear(128, 32, bias=True).to(dtype)
            x = torch.randn(2, 128, dtype=dtype)
        with torch.inference_mode():
            got = WeightOnlyLinear(linear, bits)(x)
            want = linear(x)
        if not torch.isfinite(got).all() or (got.float() - want.float()).abs().max() > 0.5:
            return "the kernel ran but its product is wrong"
    except (RuntimeError, NotImplementedError, ValueError, AttributeError) as exc:
        text = str(exc).strip().splitlines()
        return text[0][:160] if text else type(exc).__name__
    return None


def weight_bytes(module: nn.Module) -> int:
    """Bytes of weights one pass through `module` reads: its parameters, a quantised layer's packed buffers, and
    for a module that says so itself (`pass_bytes`: a restricted head reads its small head, not its fallback)."""
    own = getattr(module, "pass_bytes", None)
    if own is not None:
        return int(own)
    if isinstance(module, WeightOnlyLinear):
        return module.weight_bytes
    total = sum(p.numel() * p.element_size() for p in module.parameters(recurse=False))
    return total + sum(weight_bytes(child) for child in module.children())
