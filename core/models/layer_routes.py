"""Layer routes: which of a model's decoder layers run, as a plain value, and how a spec names one.

A `LayerRoute` is a plain, inspectable value (which layers run); `resolve_route` turns a spec (a preset
name such as "auto-slim", "layers:0-3,8", a tuple, a calibrated preset) into one. How a route runs
inside a forward pass is core.models.routed_layers (`make_routable`, `routed`). Skipped layers leave
their KV-cache slot empty; each route therefore keeps its own cache. (A "layer route" is never a tier
decision: those are core.decoding.tiers.)

Sub-layer routing (as in SWIFT): a route may also skip only the attention block or only the MLP
block of a layer it runs (`skip_attention`, `skip_mlp`); a skipped block adds nothing to the
residual stream. A skipped attention block writes no KV entries, exactly like a skipped layer, so
the layers the cache is sized from never have their attention skipped. Calibrated routes are
stored as small JSON presets in `core/presets/` and resolved by name (`calibrated-slim`).
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path

from core.errors import RoutingError, shown

PRESET_DIR = Path(__file__).resolve().parent.parent / "presets"
"""Calibrated routes per model (`python -m core.tools.calibrate` writes them)."""


@dataclass(frozen=True)
class LayerRoute:
    """Which decoder layers run. `layers` is sorted; `name` says where it came from.

    `skip_attention` / `skip_mlp` name layers among `layers` that run without their attention or
    MLP block (sub-layer routing); both empty means whole-layer routing, as before.
    """

    layers: tuple[int, ...]
    num_layers: int
    name: str = "custom"
    skip_attention: tuple[int, ...] = ()
    skip_mlp: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        """What the route computes, as text: equal keys mean equal logits (memo keys must use this)."""
        parts = [",".join(map(str, self.layers))]
        if self.skip_attention:
            parts.append("a-" + ",".join(map(str, self.skip_attention)))
        if self.skip_mlp:
            parts.append("m-" + ",".join(map(str, self.skip_mlp)))
        return ";".join(parts)

    @property
    def skipped(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.num_layers) if i not in self.layers)

    @property
    def is_full(self) -> bool:
        return len(self.layers) == self.num_layers and not self.skip_attention and not self.skip_mlp

    def describe(self) -> str:
        if self.is_full:
            return f"{self.name}: all {self.num_layers} layers"
        text = f"{self.name}: {len(self.layers)}/{self.num_layers} layers, skips {_ranges(self.skipped)}"
        if self.skip_attention:
            text += f", attention of {_ranges(self.skip_attention)}"
        if self.skip_mlp:
            text += f", MLP of {_ranges(self.skip_mlp)}"
        return text


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
    # SmolLM2-135M (llama, 30 layers, width 576), from `python -m core.tools.route_search --skip 12 --prompts 3`:
    # skipping 3 layers keeps 0.69 top-1 agreement with the full model, skipping 8 keeps 0.34.
    ("llama", 30, 576): {"slim": (14, 17, 18), "draft": (5, 6, 12, 14, 17, 18, 22, 23)},
}
"""Layers to skip found by the route search, keyed by (model type, depth, width)."""

PRESETS: dict[str, str] = {
    "auto-slim": "searched slim route where known (SmolLM2-135M: skip 3 layers), else skip-middle-25",
    "auto-draft": "searched drafter route where known (SmolLM2-135M: skip 8 layers), else skip-middle-50",
    "calibrated-slim": "slim route from `python -m core.tools.calibrate` where a preset exists (core/presets), "
                       "else auto-slim",
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
    elif isinstance(spec, str) and spec.startswith("calibrated-"):
        preset = find_preset(text_config)
        role = spec[len("calibrated-"):]
        if preset is None or role not in preset.get("routes", {}):
            fallback = resolve_route("auto-" + role if f"auto-{role}" in PRESETS else "auto-slim", config)
            return LayerRoute(fallback.layers, n, f"{fallback.name} (no calibrated preset)")
        return route_from_dict(preset["routes"][role], text_config, name=f"{spec} ({preset['name']})")
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
        text, _, sub = spec[len("layers:"):].partition(";")
        layers, name = _parse_layers(text, n), "custom"
        if sub:
            return _with_sublayers(resolve_route(f"layers:{text}", config), sub, text_config)
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


def _with_sublayers(route: LayerRoute, text: str, text_config: object) -> LayerRoute:
    """Add 'no-attn:5,7;no-mlp:20-22' (the part of a 'layers:' spec after the first ';') to a route."""
    skips: dict[str, set[int]] = {"no-attn": set(), "no-mlp": set()}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        kind, _, indices = part.partition(":")
        if kind not in skips:
            raise RoutingError(f"cannot read '{part}': after 'layers:...;' write 'no-attn:5,7' or 'no-mlp:20-22'")
        skips[kind] |= _parse_layers(indices, route.num_layers)
    return with_sublayer_skips(route, skips["no-attn"], skips["no-mlp"], text_config)


def with_sublayer_skips(route: LayerRoute, skip_attention: set[int] | tuple[int, ...],
                        skip_mlp: set[int] | tuple[int, ...], config: object, name: str | None = None) -> LayerRoute:
    """`route` with the attention / MLP blocks of some of its layers skipped (checked against the model)."""
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    attention, mlp = set(skip_attention), set(skip_mlp)
    outside = sorted(i for i in attention | mlp if i not in route.layers)
    if outside:
        raise RoutingError(f"sub-layer skips name layers {outside} that the route does not run")
    kept = sorted(attention & protected_layers(text_config))
    if kept:
        raise RoutingError(f"the attention of layers {kept} sizes the KV cache and masks: it cannot be skipped")
    return LayerRoute(route.layers, route.num_layers, name or route.name, tuple(sorted(attention)), tuple(sorted(mlp)))


def route_to_dict(route: LayerRoute) -> dict:
    """A route as JSON-ready data (what presets store)."""
    return {"skip_layers": list(route.skipped), "skip_attention": list(route.skip_attention),
            "skip_mlp": list(route.skip_mlp)}


def route_from_dict(data: dict, config: object, name: str = "preset") -> LayerRoute:
    """Inverse of `route_to_dict`, validated against the model."""
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = int(text_config.num_hidden_layers)
    base = resolve_route(sorted(set(range(n)) - set(data.get("skip_layers", []))), text_config)
    return with_sublayer_skips(base, data.get("skip_attention", []), data.get("skip_mlp", []), text_config, name)


def model_signature(config: object) -> dict:
    """What a preset is matched on: model type, depth, width and vocabulary size."""
    c = config.get_text_config() if hasattr(config, "get_text_config") else config
    return {"model_type": c.model_type, "num_layers": int(c.num_hidden_layers),
            "hidden_size": int(getattr(c, "hidden_size", 0)), "vocab_size": int(getattr(c, "vocab_size", 0))}


def find_preset(config: object, directory: Path | None = None) -> dict | None:
    """The calibrated preset whose model signature matches `config`, or None."""
    signature = model_signature(config)
    for path in sorted((directory or PRESET_DIR).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("model") == signature:
            return data
    return None


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
    except RoutingError:
        raise  # out of range: already one clear line (a RoutingError is a ValueError, so it goes first)
    except ValueError:
        raise RoutingError(f"cannot read layer list '{shown(text)}': write it like 'layers:0-3,8,10-12'") from None
    return layers
