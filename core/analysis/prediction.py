"""The live tier-share prediction: the engine's own rule, replayed on teacher-forced signals (no model call).

Every position of a measured text (core.analysis.reliability.measure) is decided by the one tier rule
the engine uses, `core.decoding.tiers.decide_tier`, with the same inputs: copy evidence for a
prompt-lookup draft, the audit (copies kept on trust, the trust signal, the audit span) and the slim
gate, their state kept by the engine's own objects (core.decoding.adaptive). Rounds are those of a
run with one draft token per round (gamma 1), greedy, teacher-forced on the current text:
* a round drafts the position's token (tier 1 keeps it, tier 2 emits the slim verifier's choice, tier 3
  the full model's) and ends; when the full model kept the draft, its bonus writes the next position;
* a position where nothing was drafted (prompt lookup without a match) is written by the full model;
* a token kept on trust that the full model would not write is refused by the audit: the full model's
  token stands there (tier 3, exact) and trust starts again.
A hybrid drafter copies or drafts per position as the measurement found (`ModelSignals.copy`). On its own
output, a gamma-1 greedy run with copies, the audit or the gate routes every token as predicted here
(tests/analysis/test_prediction.py); the prediction says so (`TierPrediction.exact`, `exact_for`) where a
re-route must route the same text the same way. With longer drafts a real run also has free verdicts, and its
text changes when a tier errs, so its shares differ: label these numbers PREDICTED_LABEL. Tier 1 and 2 errors
are tokens kept without an audit that differ from the full model's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.analysis.reliability import PREDICTED_LABEL, ReliabilityData
from core.config import DecodeConfig
from core.decoding.adaptive import Adaptive, RoundFeedback
from core.decoding.tiers import TierFacts, decide_tier
from core.trace import TokenRecord
from core.vocabulary import Reason, Tier, TierDecision


@dataclass(frozen=True)
class TierPrediction:
    """Predicted share of tokens per tier and predicted error rate (see the module docstring)."""

    tokens: int
    tier_share: dict[int, float]  # tier (1, 2, 3) -> share of positions
    error_rate: float  # share of positions whose token would differ from the full model's choice
    tier_precision: dict[int, float]  # tier -> share of its positions that agree with the full model (NaN if none)
    label: str = PREDICTED_LABEL
    exact: bool = False  # a real re-route at these settings routes every token so (`exact_for`)

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "tier_share": dict(self.tier_share), "error_rate": self.error_rate,
                "tier_precision": dict(self.tier_precision), "label": self.label, "exact": self.exact}


def route_positions(data: ReliabilityData, config: DecodeConfig) -> tuple[list[TierDecision], np.ndarray]:
    """(the tier decision of every position, whether its token differs from the full model's), replaying the
    engine's rounds as the module docstring says under `config`'s policy (its mode, thresholds, copy evidence,
    trust, audit span and slim gate: core.round_policy) and signals."""
    policy = config.policy
    adaptive = Adaptive(policy)
    draft_conf, slim_conf = data.drafter.confidence[config.draft_signal], data.slim.confidence[config.slim_signal]
    agreement = data.slim_agreement if data.slim_agreement is not None else np.zeros(len(data))
    decisions: list[TierDecision] = []
    wrong = np.zeros(len(data), bool)
    k = 0
    while k < len(data):
        slim, waiting = _SlimPass(float(slim_conf[k]), float(agreement[k])), list(adaptive.audit.waiting)
        facts = TierFacts(float(draft_conf[k]), slim.confidence, slim.agreement, is_copy=bool(data.drafter.copy[k]),
                          stop_token=bool(data.stop[k]), slim_open=adaptive.gate.allows(),
                          copies_trusted=adaptive.audit.trusted, audit_due=len(waiting) >= policy.audit_span)
        # an empty draft: the full pass writes the token (and audits what waits)
        decision = decide_tier(facts, policy) if data.drafter.drafted[k] else TierDecision(Tier.FULL, Reason.NO_DRAFT)
        right = bool((data.slim if decision.tier is Tier.SLIM else data.drafter).agree[k])
        refused = decision.tier is not Tier.FULL and policy.on_trust(facts.is_copy) and not right
        decisions.append(TierDecision(Tier.FULL, Reason.AUDIT_REFUSED) if refused else decision)
        judged = None
        if decision.tier is Tier.FULL or refused:  # the full pass ran: what waits stands (refusals are caught here)
            waiting = []
            if decision.reason is not Reason.NO_DRAFT and not refused:
                judged = right if facts.is_copy else None
                if right and k + 1 < len(data):  # the full pass's bonus writes the next position
                    decisions.append(TierDecision(Tier.FULL, Reason.BONUS))
                    k += 1
        else:
            wrong[k] = not right
            if policy.on_trust(facts.is_copy):
                waiting.append((k, _placeholder(k)))
        full_ran = decisions[-1].tier is Tier.FULL
        adaptive.update(RoundFeedback(slim.ran, full_ran, refused, judged, waiting))
        k += 1
    return decisions, wrong


def exact_for(data: ReliabilityData, config: DecodeConfig, decisions: list[TierDecision], wrong: np.ndarray) -> bool:
    """Whether a real re-route under `config` routes every token as predicted: one token a round, greedy, the exact
    rule, the text already the full model's own, and no predicted error or refusal that would change that text."""
    return (config.gamma == 1 and config.greedy and config.verify_rule == "exact" and data.full_model_text
            and not wrong.any() and all(d.reason is not Reason.AUDIT_REFUSED for d in decisions))


def predict_tiers(data: ReliabilityData, tau_accept: float, tau_slim: float, draft_signal: str = "prob",
                  slim_signal: str = "prob", config: DecodeConfig | None = None) -> TierPrediction:
    """Predicted tier shares and error rate for these thresholds and signals, everything else (copy evidence,
    the audit, the gate, the drafter) from `config` (default: the config `data` was measured with)."""
    n = len(data)
    if n == 0:
        return TierPrediction(0, {1: 0.0, 2: 0.0, 3: 0.0}, 0.0, {1: math.nan, 2: math.nan, 3: math.nan})
    base = config or data.config or DecodeConfig()
    settings = base.with_(tau_accept=tau_accept, tau_slim=tau_slim, draft_signal=draft_signal,
                          slim_signal=slim_signal)
    decisions, wrong = route_positions(data, settings)
    tiers = np.array([int(d.tier) for d in decisions])
    masks = {t: tiers == t for t in (1, 2, 3)}
    return TierPrediction(
        tokens=n, tier_share={t: float(m.sum()) / n for t, m in masks.items()},
        error_rate=float(wrong.sum()) / n,
        tier_precision={t: 1.0 - float((wrong & m).sum()) / float(m.sum()) if m.any() else math.nan
                        for t, m in masks.items()},
        exact=exact_for(data, settings, decisions, wrong))


class _SlimPass:
    """One round's teacher-forced slim numbers: reading either means the round ran its slim pass."""

    def __init__(self, confidence: float, agreement: float) -> None:
        self._confidence, self._agreement, self.ran = confidence, agreement, False

    def confidence(self) -> float:
        self.ran = True
        return self._confidence

    def agreement(self) -> float:
        self.ran = True
        return self._agreement


def _placeholder(position: int) -> TokenRecord:
    """A stand-in record for a token kept on trust (the audit queue holds records)."""
    return TokenRecord(position=position, token_id=-1, text="", round=position, tier=1, outcome="", reason="",
                       verdict="")
