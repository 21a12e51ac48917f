"""The cost model: what a forward pass would cost on an accelerator, in full-verifier passes.

At decoding batch sizes a GPU pass is memory- and launch-bound: it costs about the weights it reads
and the layers it launches, nearly independent of how many tokens (1 to ~16) it scores. So one call
of a model under a route costs (weights of the layers it runs + its output head) divided by the
same for the full verifier. Plain decoding therefore costs exactly 1 unit per token, and a modelled
speed-up is tokens / units. The embedding lookup reads one row per token and is left out.
This is a model, not a measurement: the CPU here scores k tokens at about 2x one token (FINDINGS).
"""

from __future__ import annotations

import torch

from core.routing import LayerRoute, decoder_layers


def _params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


class CostModel:
    """Cost per call for each (model, route), relative to one full pass of the verifier."""

    def __init__(self, verifier: torch.nn.Module) -> None:
        self.unit = self._weights(verifier, None)

    @staticmethod
    def _weights(model: torch.nn.Module, route: LayerRoute | None) -> int:
        layers = decoder_layers(model)
        chosen = range(len(layers)) if route is None else route.layers
        head = model.get_output_embeddings()
        return sum(_params(layers[i]) for i in chosen) + (_params(head) if head is not None else 0)

    def call_cost(self, model: torch.nn.Module, route: LayerRoute) -> float:
        """Units for one pass of `model` under `route` (1.0 = full verifier pass)."""
        return self._weights(model, route) / self.unit
