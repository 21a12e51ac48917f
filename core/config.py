"""Decoding settings, validated in one place. Plain, classic SD and VIA-SD are three settings of one engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from core.errors import ConfigError, shown
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS
from core.round_policy import RoundPolicy, in_order
from core.vocabulary import SIGNALS, CopyEvidence, check_alpha

MIN_TEMPERATURE = 0.01
"""Below this, logits / temperature overflow to inf and probabilities become NaN."""
MIN_TOP_P = 1e-6
"""top_p must keep at least a sliver of probability mass."""

MODES = {
    "plain": "autoregressive decoding with the full model, one token per pass",
    "sd": "classic speculative decoding: every draft token goes to the full verifier",
    "via": "VIA-SD: direct accept, slim verifier or full verifier, by confidence",
}
DRAFTERS = {
    "self": "the verifier itself with an aggressively routed layer subset",
    "model": "a separate smaller model with the same tokenizer",
    "ngram": "prompt lookup: copy what followed the last n tokens earlier in the text",
    "hybrid": "prompt lookup when the text offers a confident copy, else the separate smaller model",
}
COPY_EVIDENCE = {
    CopyEvidence.SLIM.value: "tier 1 keeps a copy only if the slim verifier also gives the copied token >= tau_accept",
    CopyEvidence.VERIFIER.value: "copies never take tier 1: the slim or the full verifier decides every copy",
    CopyEvidence.STATISTIC.value: "tier 1 trusts the lookup statistic alone (no model in the loop; can copy back "
                                  "typos)",
    CopyEvidence.AUDIT.value: "what tiers 1 and 2 keep of a copy, and of a model's draft when greedy, waits on trust: "
                              "the full verifier's next pass, which must process it anyway, audits it and the output "
                              "is cut back to the first token it refuses (tier 1 keeps copies once they proved "
                              "reliable)",
}
"""The copy_evidence settings (core.vocabulary.CopyEvidence); what each keeps on trust is core.round_policy's."""


@dataclass(frozen=True)
class DecodeConfig:
    """Everything one run needs besides the models and the prompt.

    Thresholds: a tier fires when its confidence >= its threshold; a threshold of 1.0 switches the
    tier off and 0.0 sends every token to it. `tau_slim <= tau_accept` (unless tier 2 is off): skipping
    verification altogether should never need less confidence than trusting the slim verifier.
    Signals: `draft_signal` is what tier 1 reads, `slim_signal` what tier 2 reads; the full
    verifier's confidence is recorded with `slim_signal` too, so the two verifiers compare directly.
    Verification: `verify_rule` is how a verifier judges a draft token ("exact": lossless; lossy
    baselines live in core.decoding.policies) with its parameter `verify_alpha`; `draft_stop_below` > 0 ends a
    draft (a model's or a copy) at its first token whose confidence is below it (BiLD's fallback).
    Copies: a prompt-lookup draft's confidence is a statistic of the text, not a model's belief;
    `copy_evidence` says what model evidence tier 1 needs before it keeps a copy (COPY_EVIDENCE);
    under "audit", what tiers 1 and 2 keep (copies, and a model's drafts when greedy) waits on trust, at most
    `audit_span` tokens, before the full verifier must run and audit them. What the tiers then do with these
    settings is the run's `policy` (core.round_policy.RoundPolicy), derived once.
    Floor: with `slim_min_hit_rate` > 0, tier 2 skips its pass while fewer than that share of its
    recent passes spared the round a full pass (it then costs more than it saves); 0 never skips.
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
    copy_evidence: str = "verifier"
    slim_min_hit_rate: float = 0.0
    audit_span: int = 32

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def policy(self) -> RoundPolicy:
        """What these settings make of the tiers (core.round_policy): the thresholds applied, the trust, the gate."""
        return RoundPolicy.of(self)

    def with_(self, **changes: object) -> DecodeConfig:
        return replace(self, **changes)

    def given(self, source: object, *names: str) -> DecodeConfig:
        """This config with each named attribute of `source` (e.g. parsed command-line options) that is set,
        i.e. not None: options left unset keep this config's values."""
        return self.with_(**{n: getattr(source, n) for n in names if getattr(source, n, None) is not None})

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DecodeConfig:
        """A config from a dict over the defaults (a trace's JSON, a walkthrough file, an old download): unknown
        keys are ignored, JSON lists become the tuples they were; not validated (validate() says what is wrong)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})

    def validate(self) -> DecodeConfig:
        """Raise ConfigError with one clear sentence for the first bad setting (of any type)."""
        self._choice("mode", MODES)
        self._choice("drafter", DRAFTERS)
        self._number("tau_accept", 0.0, 1.0)
        self._number("tau_slim", 0.0, 1.0)
        if not in_order(self.tau_accept, self.tau_slim):
            raise ConfigError(
                f"thresholds out of order: tau_slim ({self.tau_slim}) must not exceed tau_accept "
                f"({self.tau_accept}); accepting with no verifier should need the most confidence"
            )
        self._whole("gamma", 1, MAX_GAMMA, "gamma (draft length)")
        self._whole("max_new_tokens", 1, MAX_NEW_TOKENS)
        self._choice("draft_signal", SIGNALS)
        self._choice("slim_signal", SIGNALS)
        self._number("temperature", 0.0, 5.0)
        if 0.0 < self.temperature < MIN_TEMPERATURE:
            raise ConfigError(f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE}, got {self.temperature}")
        self._number("top_p", MIN_TOP_P, 1.0)
        self._whole("seed", 0, 2**63 - 1)
        if not isinstance(self.verify_rule, str) or not self.verify_rule:
            raise ConfigError(f"verify_rule must be a rule name such as 'exact', got {shown(self.verify_rule)}")
        self._number("verify_alpha", -1.0e6, 1.0e6)
        if self.verify_rule != "exact":
            check_alpha(self.verify_rule, self.verify_alpha)  # each lossy rule's own range; refuses unknown names
        self._number("draft_stop_below", 0.0, 1.0)
        self._whole("ngram_size", 1, 8)
        self._number("slim_min_hit_rate", 0.0, 1.0)
        self._choice("copy_evidence", COPY_EVIDENCE)
        self._whole("audit_span", 1, 4096, "audit_span (copies kept before their audit)")
        if not isinstance(self.chat_template, bool):
            raise ConfigError(f"chat_template must be true or false, got {shown(self.chat_template)}")
        return self

    def _choice(self, name: str, options: dict) -> None:
        value = getattr(self, name)
        if not isinstance(value, str) or value not in options:
            raise ConfigError(f"{name} must be one of {', '.join(options)}, not {shown(value)!r}")

    def _number(self, name: str, low: float, high: float) -> None:
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ConfigError(f"{name} must be within [{low:g}, {high:g}], got {shown(value)}")

    def _whole(self, name: str, low: int, high: int, label: str = "") -> None:
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{label or name} must be a whole number from {low} to {high}, got {shown(value)}")


LOOKUP_PRESET = DecodeConfig(mode="via", drafter="ngram", gamma=16, tau_accept=0.9, tau_slim=1.0,
                             copy_evidence="audit", audit_span=32, draft_stop_below=0.5, max_new_tokens=96)
"""VIA-SD with prompt lookup as recommended for tasks whose answer reuses the input (the app opens on
it): copies matching the last 3 tokens with one known continuation are kept on trust once the full
model has kept whole copies (core.decoding.adaptive.TRUST_AFTER) and are audited by its next pass (output
exact); copies scoring under 0.5 are not worth a verifier's time; tier 2 is off (no slim route of
this model is cheap and precise). Chosen from `python -m core.tools.benchmark` (its numbers: README)."""


PAIR_PRESET = DecodeConfig(mode="via", drafter="model", slim_route="calibrated-slim", gamma=6, tau_accept=0.8,
                           tau_slim=1.0, copy_evidence="audit", max_new_tokens=96)
"""VIA-SD for the real pair, Qwen2.5-Coder 0.5B drafting for 1.5B (bf16 on a CPU with AVX512-BF16): the 0.5B's
tokens it is at least 0.8 sure of are kept on trust and audited by the full 1.5B's next pass (copy_evidence
"audit": output exact in greedy, as classic SD's), the rest go to the full 1.5B, 6 drafted per round. It runs with
the drafter's weights in int4 (the pair's `drafter_quant`: a drafter token then costs about an eighth of a verifier
pass instead of 0.385; README, "The drafter is the lever"). tau_accept 0.8 was picked from 0.9 / 0.8 / 0.7 / 0.5 on
the even-numbered held-out code prompts and checked on the odd-numbered ones (1.14x classic SD there, median;
1.13x over all 17; 0.9 gave 1.03x): with drafting this cheap, more rounds skipping their verifier pass pays.
Tier 2 is off: the searched slim verifier (core/presets/qwen2.5-coder-1.5b.json, "calibrated-slim") costs 0.72 of a
full pass here and is right on only 72 % of the tokens the drafter doubts, so it ran at 0.86x classic SD and changed
39 % of words (README, "The real pair"); set tau_slim below 1 (0.575 was fitted) to see it."""


PRESETS: dict[str, DecodeConfig] = {"lookup": LOOKUP_PRESET, "qwen2.5-coder": PAIR_PRESET}
"""The recommended settings by name: what the app, the CLI and the README use."""


def preset(name: str) -> DecodeConfig:
    """The recommended setting called `name` ("lookup": prompt lookup for grounded tasks; "qwen2.5-coder": the
    real pair); one clear line for an unknown name."""
    if name not in PRESETS:
        raise ConfigError(f"no preset '{shown(name)}': use one of {', '.join(PRESETS)}")
    return PRESETS[name]
