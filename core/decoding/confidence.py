"""Confidence signals: how sure a model is at one position, as a number in [0, 1].

Which signal each tier reads is configuration (`DecodeConfig.draft_signal`, `slim_signal`).
For the drafter the chosen token is the token it drafted; for a verifier it is the verifier's own
top choice, so a confident verifier is confident either way: to accept or to regenerate.
"""

from __future__ import annotations

import math

import torch


def confidences(probs: torch.Tensor, chosen: torch.Tensor, signal: str = "prob") -> torch.Tensor:
    """Confidence per row of `probs` [k, vocab] (rows sum to 1) for tokens `chosen` [k], on the device:
    one batched computation for a whole verifier pass instead of one host round-trip per position."""
    if signal == "prob":
        return probs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
    if signal == "margin":
        top = torch.topk(probs, 2, dim=-1).values
        return top[..., 0] - top[..., 1]
    if signal == "entropy":
        entropy = -(probs * torch.log(probs.clamp_min(1e-30))).sum(-1)
        return (1.0 - entropy / math.log(probs.shape[-1])).clamp_min(0.0)
    raise ValueError(f"unknown confidence signal '{signal}'")


def confidence(probs: torch.Tensor, chosen: int, signal: str = "prob") -> float:
    """Confidence of a distribution `probs` (1-D, sums to 1) under `signal`."""
    if signal == "prob":
        return float(probs[chosen])
    if signal == "margin":
        top = torch.topk(probs, 2).values
        return float(top[0] - top[1])
    if signal == "entropy":
        nonzero = probs[probs > 0]
        entropy = float(-(nonzero * nonzero.log()).sum())
        return max(0.0, 1.0 - entropy / math.log(probs.numel()))
    raise ValueError(f"unknown confidence signal '{signal}'")
