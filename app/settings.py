"""`Settings`: the Generate tab's widget values as one value type, built once per event.

Handlers, the client tests and `app.tools.live_benchmark` all build a `Settings` and ask it for a
validated `DecodeConfig`; the widget order of the public API (`/generate`, `/reroute`, ...) is the
field order here, so nothing re-lists the decoding values by hand. Fields added later go last, so a
caller that passes the older, shorter list keeps working (the missing values take their defaults).

The defaults are the app's opening state: grounded prompt 9 (rename a variable in a
function) with every decoding value read from `core.config.LOOKUP_PRESET`, never copied; what the widgets do not expose
(signals, n-gram size, verification rule, ...) comes from that preset too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from core.config import LOOKUP_PRESET, DecodeConfig
from core.errors import ConfigError
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS
from core.round_policy import in_order
from examples import load_prompts

DEFAULT = LOOKUP_PRESET
"""The decoding values the app opens with."""
DEFAULT_PROMPT = load_prompts("grounded")[8].text
"""The prompt the app opens with: rename a variable in a function, an answer that mostly copies its input."""
SAMPLING = DecodeConfig(temperature=0.8, top_p=0.95)
"""Temperature and top-p the sampling widgets show while sampling is off."""


@dataclass(frozen=True)
class Settings:
    """What the visitor chose: the prompt plus every decoding widget, in API order."""

    prompt: str = DEFAULT_PROMPT
    mode: str = DEFAULT.mode
    drafter: str = DEFAULT.drafter
    draft_route: str = str(DEFAULT.draft_route)
    slim_route: str = str(DEFAULT.slim_route)
    gamma: int = DEFAULT.gamma
    max_new_tokens: int = DEFAULT.max_new_tokens
    sampling: bool = not DEFAULT.greedy
    temperature: float = DEFAULT.temperature if not DEFAULT.greedy else SAMPLING.temperature
    top_p: float = DEFAULT.top_p if not DEFAULT.greedy else SAMPLING.top_p
    seed: int = DEFAULT.seed
    tau_accept: float = DEFAULT.tau_accept
    tau_slim: float = DEFAULT.tau_slim
    copy_evidence: str = DEFAULT.copy_evidence
    draft_stop_below: float = DEFAULT.draft_stop_below
    audit_span: int = DEFAULT.audit_span

    @classmethod
    def names(cls) -> list[str]:
        """Field names in API order (the order a gradio_client caller passes them)."""
        return [f.name for f in fields(cls)]

    @classmethod
    def from_values(cls, **values: Any) -> Settings:
        """Build from widget values; unknown names are ignored, missing ones keep their defaults."""
        known = {name: values[name] for name in cls.names() if name in values and values[name] is not None}
        return cls(**known)

    @classmethod
    def of(cls, config: DecodeConfig, prompt: str = DEFAULT_PROMPT) -> Settings:
        """The widget values that reproduce `config` (a walkthrough's, a preset's) on `prompt`."""
        sampling = not config.greedy
        return cls(prompt=prompt, mode=config.mode, drafter=config.drafter, draft_route=str(config.draft_route),
                   slim_route=str(config.slim_route), gamma=config.gamma, max_new_tokens=config.max_new_tokens,
                   sampling=sampling, temperature=config.temperature if sampling else cls.temperature,
                   top_p=config.top_p if sampling else cls.top_p, seed=config.seed, tau_accept=config.tau_accept,
                   tau_slim=config.tau_slim, copy_evidence=config.copy_evidence,
                   draft_stop_below=config.draft_stop_below, audit_span=config.audit_span)

    def as_list(self) -> list[Any]:
        """Positional values for a gradio_client call."""
        return list(asdict(self).values())

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def clamped(self) -> tuple[Settings, list[str]]:
        """The one rule for numbers out of range: each is clamped into its range, with one line saying so (a
        slider's box shows the clamped value once it loses focus, so box and result agree). τ_slim above
        τ_accept (tier 2 on) is taken down to τ_accept, as the sliders do. Not-a-number values are left for
        `config()` to refuse (the box then keeps the last good value)."""
        changes, notes = {}, []
        for name, label, low, high, whole in RANGES:
            try:
                value = float(getattr(self, name))
            except (TypeError, ValueError):
                continue
            if value != value or value in (float("inf"), float("-inf")):
                continue
            bounded = min(max(value, low), high)
            if bounded != value:
                changes[name] = int(bounded) if whole else bounded
                notes.append(f"{label} {value:g} is {'below' if value < low else 'above'} its range "
                             f"({low:g}–{high:g}): using {bounded:g}")
        settings = self.with_(**changes)
        try:
            a, s = float(settings.tau_accept), float(settings.tau_slim)
        except (TypeError, ValueError):
            return settings, notes
        if not in_order(a, s):
            settings = settings.with_(tau_slim=a)
            notes.append(f"τ_slim {s:g} above τ_accept {a:g}: τ_slim follows τ_accept down to {a:g}")
        return settings, notes

    def config(self) -> DecodeConfig:
        """The validated decoding config; raises core.ConfigError with a sentence a visitor can act on."""
        thresholds = {}
        for name, label in (("tau_accept", "τ_accept"), ("tau_slim", "τ_slim"),
                            ("draft_stop_below", "stop a draft below")):
            value = _number(getattr(self, name), label)
            if not 0.0 <= value <= 1.0:
                off = "; 1.0 switches its tier off" if name.startswith("tau") else "; 0 never stops a draft"
                raise ConfigError(f"{label} must be between 0 and 1 (you gave {value:g}){off}")
            thresholds[name] = round(value, 4)
        return DEFAULT.with_(
            mode=self.mode, drafter=self.drafter, draft_route=(self.draft_route or "").strip(),
            slim_route=(self.slim_route or "").strip(), gamma=_whole(self.gamma, "γ"),
            max_new_tokens=_whole(self.max_new_tokens, "max new tokens"),
            temperature=float(self.temperature) if self.sampling else 0.0,
            top_p=float(self.top_p) if self.sampling else 1.0, seed=_whole(self.seed, "seed"),
            copy_evidence=self.copy_evidence, audit_span=_whole(self.audit_span, "audit span"), **thresholds,
        ).validate()


RANGES = (("tau_accept", "τ_accept", 0.0, 1.0, False), ("tau_slim", "τ_slim", 0.0, 1.0, False),
          ("draft_stop_below", "stop a draft below", 0.0, 1.0, False), ("gamma", "γ", 1, MAX_GAMMA, True),
          ("max_new_tokens", "max new tokens", 1, MAX_NEW_TOKENS, True), ("audit_span", "audit span", 1, 4096, True))
"""The numbers a visitor types, with their ranges (core.config's checks and core.limits)."""


def _number(value: Any, label: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{label} must be a number, not '{value}'") from None


def _whole(value: Any, label: str) -> int:
    try:
        return int(_number(value, label))
    except (ValueError, OverflowError):  # NaN or infinity
        raise ConfigError(f"{label} must be a whole number, not '{value}'") from None


THREE_TIER = Settings.of(DecodeConfig(max_new_tokens=48), prompt=load_prompts("chat")[0].text)
"""The cockpit's one-click way to a run where both thresholds move the result: the engine's own three-tier
defaults (self-drafter, τ_accept 0.8, τ_slim 0.5) on the first chat prompt, 48 tokens as links use."""
