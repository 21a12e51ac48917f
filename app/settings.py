"""`Settings`: the Generate tab's widget values as one value type, built once per event.

Handlers, the client tests and `app.live_benchmark` all build a `Settings` and ask it for a
validated `DecodeConfig`; the widget order of the public API (`/generate`, `/reroute`, ...) is the
field order here, so nothing re-lists the twelve decoding values by hand.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from core import DecodeConfig
from core.errors import ConfigError

DEFAULT = DecodeConfig()


@dataclass(frozen=True)
class Settings:
    """What the visitor chose: the prompt plus every decoding widget, in API order."""

    prompt: str = ""
    mode: str = DEFAULT.mode
    drafter: str = DEFAULT.drafter
    draft_route: str = str(DEFAULT.draft_route)
    slim_route: str = str(DEFAULT.slim_route)
    gamma: int = DEFAULT.gamma
    max_new_tokens: int = 48
    sampling: bool = False
    temperature: float = 0.8
    top_p: float = 0.95
    seed: int = 0
    tau_accept: float = DEFAULT.tau_accept
    tau_slim: float = DEFAULT.tau_slim

    @classmethod
    def names(cls) -> list[str]:
        """Field names in API order (the order a gradio_client caller passes them)."""
        return [f.name for f in fields(cls)]

    @classmethod
    def from_values(cls, **values: Any) -> Settings:
        """Build from widget values; unknown names are ignored, missing ones keep their defaults."""
        known = {name: values[name] for name in cls.names() if name in values and values[name] is not None}
        return cls(**known)

    def as_list(self) -> list[Any]:
        """Positional values for a gradio_client call."""
        return list(asdict(self).values())

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def config(self) -> DecodeConfig:
        """The validated decoding config; raises core.ConfigError with a sentence a visitor can act on."""
        thresholds = {}
        for name, label in (("tau_accept", "τ_accept"), ("tau_slim", "τ_slim")):
            value = _number(getattr(self, name), label)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{label} must be between 0 and 1 (you gave {value:g}); 1.0 switches its tier off")
            thresholds[name] = round(value, 4)
        return DecodeConfig(
            mode=self.mode, drafter=self.drafter, draft_route=(self.draft_route or "").strip(),
            slim_route=(self.slim_route or "").strip(), gamma=int(_number(self.gamma, "γ")),
            max_new_tokens=int(_number(self.max_new_tokens, "max new tokens")),
            temperature=float(self.temperature) if self.sampling else 0.0,
            top_p=float(self.top_p) if self.sampling else 1.0, seed=int(_number(self.seed, "seed")), **thresholds,
        ).validate()


def _number(value: Any, label: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{label} must be a number, not '{value}'") from None
