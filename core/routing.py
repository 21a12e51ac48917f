"""Intra-model routing: run only a subset of a model's decoder layers, with the same weights.

A `LayerRoute` is a plain, inspectable value (which layers run). `make_routable` wraps each decoder
layer once in a `RoutedLayer` that, during a call made under `routed(route)`, either runs the layer
or passes its input through. The active route lives in a context variable, so two routes (drafter
and slim verifier) coexist, and concurrent requests in other threads never see each other's route.
Skipped layers leave their KV-cache slot empty; each route therefore keeps its own cache.
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from core.errors import RoutingError, shown

_ACTIVE: contextvars.ContextVar[frozenset[int] | None] = contextvars.ContextVar("active_route", default=None)


@dataclass(frozen=True)
class LayerRoute:
    """Which decoder layers run. `layers` is sorted; `name` says where it came from."""

    layers: tuple[int, ...]
    num_layers: int
    name: str = "custom"

    @property
    def skipped(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.num_layers) if i not in self.layers)

    @property
    def is_full(self) -> bool:
        return len(self.layers) == self.num_layers

    def describe(self) -> str:
        if self.is_full:
            return f"{self.name}: all {self.num_layers} layers"
        return f"{self.name}: {len(self.layers)}/{self.num_layers} layers, skips {_ranges(self.skipped)}"


def _ranges(indices: tuple[int, ...]) -> str:
    out, start = [], None
    for i, value in enumerate(indices):
        if start is None:
            start = value
        if i + 1 == len(indices) or indices[i + 1] != value + 1:
            out.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ",".join(out) or "none"


def _skip_middle(n: int, share: float) -> set[int]:
    count = round(n * share)
    first = (n - count) // 2
    return set(range(first, first + count))


SEARCHED: dict[tuple[str, int, int], dict[str, tuple[int, ...]]] = {
    # SmolLM2-135M (llama, 30 layers, width 576), from `python -m core.route_search --skip 12 --prompts 3`:
    # skipping 3 layers keeps 0.69 top-1 agreement with the full model, skipping 8 keeps 0.34.
    ("llama", 30, 576): {"slim": (14, 17, 18), "draft": (5, 6, 12, 14, 17, 18, 22, 23)},
}
"""Layers to skip found by the route search, keyed by (model type, depth, width)."""

PRESETS: dict[str, str] = {
    "auto-slim": "searched slim route where known (SmolLM2-135M: skip 3 layers), else skip-middle-25",
    "auto-draft": "searched drafter route where known (SmolLM2-135M: skip 8 layers), else skip-middle-50",
    "full": "every layer (the full verifier)",
    "skip-middle-25": "skip the middle quarter of the layers",
    "skip-middle-50": "skip the middle half of the layers",
    "skip-alternate-50": "skip every other layer in the middle half",
    "early-exit-50": "run only the first half of the layers",
    "early-exit-75": "run only the first three quarters of the layers",
}
"""Named routes that work for any depth; `resolve_route` turns a name into layers."""


def protected_layers(config: object) -> set[int]:
    """Layers a route must keep: the KV cache and attention masks are sized from them.

    Layer 0 for every family; for hybrid sliding/full attention models (Gemma-3, Qwen2 with
    sliding layers) also the first layer of each attention type.
    """
    keep = {0}
    layer_types = getattr(config, "layer_types", None) or []
    for kind in set(layer_types):
        keep.add(layer_types.index(kind))
    return keep


def resolve_route(spec: str | tuple[int, ...] | list[int] | LayerRoute, config: object) -> LayerRoute:
    """Turn a preset name, a 'layers:0,1,5-9' string, or a list of layer indices into a route."""
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = int(text_config.num_hidden_layers)
    if isinstance(spec, LayerRoute):
        layers, name = set(spec.layers), spec.name
    elif isinstance(spec, str) and spec in PRESETS:
        name = spec
        searched = SEARCHED.get((text_config.model_type, n, int(getattr(text_config, "hidden_size", 0))), {})
        if spec.startswith("auto-"):
            fallback = {"auto-slim": "skip-middle-25", "auto-draft": "skip-middle-50"}[spec]
            if spec[5:] not in searched:
                return resolve_route(fallback, config)
            skip: set[int] = set(searched[spec[5:]])
            name = f"searched-{spec[5:]}"
        elif spec == "full":
            skip = set()
        elif spec.startswith("skip-middle-"):
            skip = _skip_middle(n, int(spec.rsplit("-", 1)[1]) / 100)
        elif spec == "skip-alternate-50":
            skip = set(sorted(_skip_middle(n, 0.5))[::2])
        else:
            skip = set(range(round(n * int(spec.rsplit("-", 1)[1]) / 100), n))
        layers = set(range(n)) - skip
    elif isinstance(spec, str) and spec.startswith("layers:"):
        layers, name = _parse_layers(spec[len("layers:"):], n), "custom"
    elif isinstance(spec, (tuple, list)):
        try:
            layers, name = {operator.index(i) for i in spec}, "custom"
        except TypeError:
            raise RoutingError(f"a layer list holds whole layer numbers, not {shown(spec)}") from None
    else:
        raise RoutingError(f"unknown route '{shown(spec)}': use one of {', '.join(PRESETS)} or 'layers:0-3,8'")
    bad = sorted(i for i in layers if not 0 <= i < n)
    if bad:
        listed = ", ".join(map(str, bad[:5])) + (", …" if len(bad) > 5 else "")
        raise RoutingError(f"route names layers {listed} but the model has layers 0-{n - 1}")
    layers |= protected_layers(text_config)
    return LayerRoute(layers=tuple(sorted(layers)), num_layers=n, name=name)


def _parse_layers(text: str, num_layers: int) -> set[int]:
    """'0-3,8' -> {0, 1, 2, 3, 8}; bounds are checked before a range is expanded (no 'layers:0-10**11')."""
    layers: set[int] = set()
    try:
        for part in filter(None, (p.strip() for p in text.split(","))):
            lo, _, hi = part.partition("-")
            first, last = int(lo), int(hi or lo)
            if not 0 <= first <= last < num_layers:
                raise RoutingError(f"route names layers {shown(part, 40)} but the model has layers "
                                   f"0-{num_layers - 1}")
            layers.update(range(first, last + 1))
    except ValueError:
        raise RoutingError(f"cannot read layer list '{shown(text)}': write it like 'layers:0-3,8,10-12'") from None
    return layers


class RoutedLayer(torch.nn.Module):
    """A decoder layer that passes its input through when the active route skips it."""

    def __init__(self, layer: torch.nn.Module, index: int) -> None:
        super().__init__()
        self.layer = layer
        self.index = index

    def forward(self, hidden_states: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        active = _ACTIVE.get()
        if active is not None and self.index not in active:
            return hidden_states
        return self.layer(hidden_states, *args, **kwargs)

    def __getattr__(self, name: str) -> object:
        # The model's own loop reads attributes such as `attention_type` off its layers.
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("layer"), name)


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
    token = _ACTIVE.set(None if route is None or route.is_full else frozenset(route.layers))
    try:
        yield
    finally:
        _ACTIVE.reset(token)
