"""How a layer route runs: each decoder layer wrapped once, and the route in force held per request.

`make_routable` wraps each decoder layer once in a `RoutedLayer` that, during a call made under
`routed(route)`, either runs the layer or passes its input through. The active route lives in a
context variable, so two routes (drafter and slim verifier) coexist, and concurrent requests in
other threads never see each other's route (compare transformers' early-exit generator, which
mutates the model config). Sub-layer skips (`RoutedBlock`) zero an attention or MLP block's output.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from core.errors import RoutingError
from core.models.layer_routes import LayerRoute


@dataclass(frozen=True)
class _Active:
    """The route in force for the current context, as sets for fast membership tests."""

    layers: frozenset[int]
    skip_attention: frozenset[int]
    skip_mlp: frozenset[int]


_ACTIVE: contextvars.ContextVar[_Active | None] = contextvars.ContextVar("active_route", default=None)


class RoutedLayer(torch.nn.Module):
    """A decoder layer that passes its input through when the active route skips it."""

    def __init__(self, layer: torch.nn.Module, index: int) -> None:
        super().__init__()
        self.layer = layer
        self.index = index
        for attribute, part in (("self_attn", "attention"), ("mlp", "mlp")):
            block = getattr(layer, attribute, None)
            if isinstance(block, torch.nn.Module) and not isinstance(block, RoutedBlock):
                setattr(layer, attribute, RoutedBlock(block, index, part))

    def forward(self, hidden_states: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        active = _ACTIVE.get()
        if active is not None and self.index not in active.layers:
            return hidden_states
        return self.layer(hidden_states, *args, **kwargs)

    def __getattr__(self, name: str) -> object:
        # The model's own loop reads attributes such as `attention_type` off its layers.
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("layer"), name)


class RoutedBlock(torch.nn.Module):
    """A layer's attention or MLP block that adds nothing (returns zeros) when the active route skips it.

    Every supported family adds the block's (possibly normalised) output to the residual stream, and
    RMSNorm of zeros is zeros, so a zero output is exactly "this block did not run".
    """

    def __init__(self, block: torch.nn.Module, index: int, part: str) -> None:
        super().__init__()
        self.block = block
        self.index = index
        self.part = part

    def forward(self, *args: object, **kwargs: object) -> object:
        active = _ACTIVE.get()
        skipped = None if active is None else active.skip_attention if self.part == "attention" else active.skip_mlp
        if skipped and self.index in skipped:
            hidden = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
            zeros = torch.zeros_like(hidden)
            return (zeros, None) if self.part == "attention" else zeros
        return self.block(*args, **kwargs)

    def __getattr__(self, name: str) -> object:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("block"), name)


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The ModuleList of decoder layers of a Hugging Face causal LM."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise RoutingError(f"{type(model).__name__} has no model.layers list; layer routing cannot wrap it")
    return layers


def make_routable(model: torch.nn.Module) -> None:
    """Wrap each decoder layer once; a model with no active route behaves exactly as before."""
    layers = decoder_layers(model)
    for i, layer in enumerate(layers):
        if not isinstance(layer, RoutedLayer):
            layers[i] = RoutedLayer(layer, i)


@contextlib.contextmanager
def routed(route: LayerRoute | None) -> Iterator[None]:
    """Run the forward calls inside this block with only `route.layers` executed."""
    active = None if route is None or route.is_full else _Active(
        frozenset(route.layers), frozenset(route.skip_attention), frozenset(route.skip_mlp))
    token = _ACTIVE.set(active)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
