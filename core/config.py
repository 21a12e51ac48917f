"""Decoding settings, validated in one place. Plain, classic SD and VIA-SD are three settings of one engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from core.confidence import SIGNALS
from core.errors import ConfigError
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS

MODES = {
    "plain": "autoregressive decoding with the full model, one token per pass",
    "sd": "classic speculative decoding: every draft token goes to the full verifier",
    "via": "VIA-SD: direct accept, slim verifier or full verifier, by confidence",
}
DRAFTERS = {
    "self": "the verifier itself with an aggressively routed layer subset",
    "model": "a separate smaller model with the same tokenizer",
    "ngram": "prompt lookup: copy what followed the last n tokens earlier in the text",
}


@dataclass(frozen=True)
class DecodeConfig:
    """Everything one run needs besides the models and the prompt.

    Thresholds: a tier fires when its confidence >= its threshold; a threshold of 1.0 switches the
    tier off and 0.0 sends every token to it. `tau_slim <= tau_accept`: skipping verification
    altogether should never need less confidence than trusting the slim verifier.
    Signals: `draft_signal` is what tier 1 reads, `slim_signal` what tier 2 reads; the full
    verifier's confidence is recorded with `slim_signal` too, so the two verifiers compare directly.
    Verification: `verify_rule` is how a verifier judges a draft token ("exact": lossless; lossy
    baselines live in core.policies) with its parameter `verify_alpha`; `draft_stop_below` > 0 ends a
    model drafter's draft when its confidence drops below it (BiLD's fallback).
    """

    mode: str = "via"
    drafter: str = "self"
    draft_route: str | tuple[int, ...] = "auto-draft"
    slim_route: str | tuple[int, ...] = "auto-slim"
    gamma: int = 4
    tau_accept: float = 0.8
    tau_slim: float = 0.5
    draft_signal: str = "prob"
    slim_signal: str = "prob"
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    ngram_size: int = 3
    chat_template: bool = True
    verify_rule: str = "exact"
    verify_alpha: float = 0.0
    draft_stop_below: float = 0.0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def effective_thresholds(self) -> tuple[float, float]:
        """(tau_accept, tau_slim) actually applied: classic SD switches tiers 1 and 2 off."""
        if self.mode == "via":
            return self.tau_accept, self.tau_slim
        return 1.0, 1.0

    def with_(self, **changes: object) -> DecodeConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> DecodeConfig:
        """Raise ConfigError with one clear sentence for the first bad setting."""
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, not '{self.mode}'")
        if self.drafter not in DRAFTERS:
            raise ConfigError(f"drafter must be one of {', '.join(DRAFTERS)}, not '{self.drafter}'")
        for name in ("tau_accept", "tau_slim"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ConfigError(f"{name} must be within [0, 1], got {value}")
        if self.tau_slim > self.tau_accept:
            raise ConfigError(
                f"thresholds out of order: tau_slim ({self.tau_slim}) must not exceed tau_accept "
                f"({self.tau_accept}); accepting with no verifier should need the most confidence"
            )
        if not isinstance(self.gamma, int) or not 1 <= self.gamma <= MAX_GAMMA:
            raise ConfigError(f"gamma (draft length) must be an integer from 1 to {MAX_GAMMA}, got {self.gamma}")
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise ConfigError(f"max_new_tokens must be from 1 to {MAX_NEW_TOKENS}, got {self.max_new_tokens}")
        for name in ("draft_signal", "slim_signal"):
            if getattr(self, name) not in SIGNALS:
                raise ConfigError(f"{name} must be one of {', '.join(SIGNALS)}, not '{getattr(self, name)}'")
        if not 0.0 <= self.temperature <= 5.0:
            raise ConfigError(f"temperature must be within [0, 5] (0 means greedy), got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"top_p must be within (0, 1], got {self.top_p}")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise ConfigError(f"seed must be a whole number from 0 to 2**63 - 1, got {self.seed}")
        if not isinstance(self.verify_rule, str) or not self.verify_rule:
            raise ConfigError(f"verify_rule must be a rule name such as 'exact', got {self.verify_rule!r}")
        for name in ("verify_alpha", "draft_stop_below"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0e6:
                raise ConfigError(f"{name} must be a number >= 0, got {value}")
        if not 0.0 <= self.draft_stop_below <= 1.0:
            raise ConfigError(f"draft_stop_below must be within [0, 1], got {self.draft_stop_below}")
        if not 1 <= self.ngram_size <= 8:
            raise ConfigError(f"ngram_size must be from 1 to 8, got {self.ngram_size}")
        return self
