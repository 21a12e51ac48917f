"""The round policy: what a run's settings make of the three tiers, derived once and stamped into its trace.

The tier rule (core.decoding.tiers.decide_tier) reads a `RoundPolicy` and one token's facts, nothing else. The
policy says, once per run: the thresholds each tier really applies (plain decoding and classic SD switch tiers 1
and 2 off, whatever the sliders say), which kinds of draft the drafter makes, what model evidence a copy needs,
which drafts tiers 1 and 2 keep only on trust for the full model's audit, the slim gate's floor and the audit
span. "A threshold of 1.0 switches its tier off" is written here once (`switched_off`), and every reader, from
the engine to the app's captions, asks the policy the engine stamped (`Trace.policy`) instead of the settings.
This module sits at the bottom of the import graph beside core.vocabulary: settings, traces and views all use it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Protocol

from core.vocabulary import CopyEvidence, DraftKind

OFF = 1.0
"""A threshold at (or above) this switches its tier off: no confidence reaches it, 1.0 included."""


def switched_off(threshold: float) -> bool:
    """Whether a threshold switches its tier off (the one place this is decided)."""
    return threshold >= OFF


def fires(confidence: float, threshold: float) -> bool:
    """A tier takes a token when its confidence >= the threshold and the tier is on."""
    return not switched_off(threshold) and confidence >= threshold


def in_order(tau_accept: float, tau_slim: float) -> bool:
    """A threshold pair the settings accept: tau_slim <= tau_accept (skipping verification should never need less
    confidence than trusting the slim verifier), unless tier 2 is off, which goes with any tau_accept."""
    return tau_slim <= tau_accept or switched_off(tau_slim)


def threshold_text(threshold: float) -> str:
    """A threshold as people read it: 'off' for a tier switched off, else the number ('0.9')."""
    return "off" if switched_off(threshold) else f"{threshold:g}"


def thresholds_apply(mode: str) -> bool:
    """Whether a mode lets tiers 1 and 2 act at all: only VIA-SD (plain decoding drafts nothing, classic SD sends
    every draft token to the full model, whatever the thresholds say)."""
    return mode == "via"


class Settings(Protocol):
    """The settings a policy is derived from (core.config.DecodeConfig has them all)."""

    mode: str
    drafter: str
    tau_accept: float
    tau_slim: float
    copy_evidence: str
    temperature: float
    slim_min_hit_rate: float
    audit_span: int


DRAFTS = {"self": DraftKind.MODEL, "model": DraftKind.MODEL, "ngram": DraftKind.COPY, "hybrid": DraftKind.HYBRID}


@dataclass(frozen=True)
class RoundPolicy:
    """One run's tier policy (see the module docstring); built by `of`, read by the engine and every view."""

    mode: str  # plain | sd | via (core.config.MODES)
    drafts: DraftKind
    tau_accept: float  # as applied: 1.0 (off) outside VIA-SD
    tau_slim: float  # as applied: 1.0 (off) outside VIA-SD
    copy_evidence: CopyEvidence
    greedy: bool
    slim_min_hit_rate: float = 0.0  # the slim gate's floor (core.decoding.adaptive.SlimGate); 0 never skips
    audit_span: int = 32  # at most this many tokens wait on trust before the full pass is due

    @classmethod
    def of(cls, settings: Settings) -> RoundPolicy:
        """The policy of these settings: the one derivation, used by the engine and for traces without a policy."""
        via = thresholds_apply(settings.mode)
        return cls(mode=settings.mode, drafts=DraftKind.NONE if settings.mode == "plain" else DRAFTS[settings.drafter],
                   tau_accept=settings.tau_accept if via else OFF, tau_slim=settings.tau_slim if via else OFF,
                   copy_evidence=CopyEvidence(settings.copy_evidence), greedy=settings.temperature == 0.0,
                   slim_min_hit_rate=settings.slim_min_hit_rate, audit_span=settings.audit_span)

    def retuned(self, tau_accept: float, tau_slim: float) -> RoundPolicy:
        """The same policy at other thresholds (VIA-SD only: the other modes apply none)."""
        return replace(self, tau_accept=tau_accept, tau_slim=tau_slim) if self.mode == "via" else self

    @property
    def tier1_on(self) -> bool:
        return not switched_off(self.tau_accept)

    @property
    def tier2_on(self) -> bool:
        return not switched_off(self.tau_slim)

    @property
    def makes_copies(self) -> bool:
        return self.drafts in (DraftKind.COPY, DraftKind.HYBRID)

    @property
    def makes_model_drafts(self) -> bool:
        return self.drafts in (DraftKind.MODEL, DraftKind.HYBRID)

    def on_trust(self, is_copy: bool) -> bool:
        """Whether a draft token that tier 1 or 2 keeps waits on trust for the full model's audit: copies under
        copy evidence "audit", and a model's drafts too when greedy (the audit is then an argmax match: exact)."""
        return (self.copy_evidence is CopyEvidence.AUDIT and (self.tier1_on or self.tier2_on)
                and (is_copy or self.greedy))

    @property
    def copies_on_trust(self) -> bool:
        return self.makes_copies and self.on_trust(True)

    @property
    def model_drafts_on_trust(self) -> bool:
        return self.makes_model_drafts and self.on_trust(False)

    @property
    def audits(self) -> bool:
        """Whether this run can keep anything on trust (and so audit it)."""
        return self.copies_on_trust or self.model_drafts_on_trust

    @property
    def method(self) -> str:
        """What the run is by what its tiers can do ("plain", "sd", "via"): VIA-SD with both tiers off is classic SD."""
        if self.drafts is DraftKind.NONE:
            return "plain"
        return "via" if self.tier1_on or self.tier2_on else "sd"

    @property
    def name(self) -> str:
        return {"plain": "plain decoding", "sd": "classic SD", "via": "VIA-SD"}[self.method]

    def to_dict(self) -> dict:
        """The stamped form (JSON): the fields, then what they mean, for a reader of the file (ignored on load)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(drafts=self.drafts.value, copy_evidence=self.copy_evidence.value, name=self.name,
                    tier1_on=self.tier1_on, tier2_on=self.tier2_on, copies_on_trust=self.copies_on_trust,
                    model_drafts_on_trust=self.model_drafts_on_trust)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> RoundPolicy:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        return cls(**{**values, "drafts": DraftKind(values["drafts"]),
                      "copy_evidence": CopyEvidence(values["copy_evidence"])})
