"""The one trace format every mode writes: per token, per round, per run. Converts to pandas and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd

from core.config import DecodeConfig
from core.round_policy import RoundPolicy
from core.vocabulary import DEFAULT_PROFILE, Audit, DraftKind, ExpectationCheck, Tier, WordSpan


@dataclass(frozen=True)
class TierInputs:
    """The plain facts the tier rule read for one draft token (core.decoding.tiers.TierFacts), recorded with it so
    the same rule can be asked again (other thresholds, a test); its confidences are the record's own."""

    is_copy: bool  # a prompt-lookup copy (else a model's draft)
    stop_token: bool
    full_already_ran: bool
    slim_open: bool  # the slim gate let tier 2 run this round
    copies_trusted: bool
    audit_due: bool
    slim_agreement: float | None = None  # the slim verifier's probability of the drafted token, when it was read


@dataclass
class TokenRecord:
    """One generated token and how it was resolved."""

    position: int  # index among generated tokens, from 0
    token_id: int
    text: str
    round: int
    tier: int  # 1 direct accept, 2 slim verifier, 3 full verifier
    outcome: str  # a core.vocabulary.Outcome value
    reason: str  # a core.vocabulary.Reason value: why this tier decided (recorded, never re-derived)
    verdict: str  # a core.vocabulary.Why value: what the deciding rule said ("argmax", "draft trusted", ...)
    draft_confidence: float | None = None
    slim_confidence: float | None = None
    full_confidence: float | None = None
    audit: str = Audit.NONE.value  # a core.vocabulary.Audit value: kept on trust, audited, refused, cut
    audit_round: int | None = None  # the round whose full pass audited it (audited) or cut it (refused, cut)
    inputs: TierInputs | None = None  # what the tier rule read (None: no draft decided it, or an older trace)

    def __post_init__(self) -> None:
        if isinstance(self.inputs, dict):
            self.inputs = TierInputs(**self.inputs)

    def audit_at(self, round_index: int) -> str:
        """The audit state as it stood after round `round_index`: an audit of a later round was still pending."""
        if self.audit != Audit.NONE and self.audit_round is not None and self.audit_round > round_index:
            return Audit.TRUSTED.value
        return self.audit


@dataclass
class CallRecord:
    """One logical forward call of one model (role: drafter, slim or full)."""

    role: str
    tokens_processed: int
    layers: int
    cost_units: float  # in full-verifier passes, priced once by the run's profile (Trace.cost_profile)
    wall_s: float  # measured; 0 when the prediction came from the memo
    from_memo: bool
    prefill: bool = False  # this pass read the prompt: its model's first pass of the run
    prefill_units: float = 0.0  # the part of cost_units spent on the prompt (every method pays it once)


@dataclass(frozen=True)
class UnwrittenDecision:
    """A draft token the tier rule sent to the full model whose pass then audited an earlier token kept on trust and
    refused it: the round ended there, so the token was decided but never written. Recorded so that every decision
    the rule made can be asked again (its facts, as a token's)."""

    round: int
    tier: int
    reason: str
    draft_confidence: float
    slim_confidence: float | None
    inputs: TierInputs


@dataclass
class RoundRecord:
    """One draft-and-verify round."""

    index: int
    draft_tokens: list[int]
    accepted: int  # draft tokens kept when this round judged them (an audit may cut some later; metrics.py)
    emitted: int  # tokens appended this round (kept drafts + a regenerated, corrected or bonus token)
    rolled_back: int = 0  # earlier tokens this round's audit cut from the output (copy_evidence "audit")
    calls: list[CallRecord] = field(default_factory=list)
    wall_s: float = 0.0
    draft_texts: list[str] = field(default_factory=list)  # each draft token as text, so a saved trace spells its
    # drafts (those never kept too) without the model's tokenizer; empty in traces recorded before it was kept
    unwritten: UnwrittenDecision | None = None  # the decision whose full pass refused an earlier token, if any

    def __post_init__(self) -> None:
        if isinstance(self.unwritten, dict):
            self.unwritten = UnwrittenDecision(**{**self.unwritten, "inputs": TierInputs(**self.unwritten["inputs"])})

    @property
    def drafted(self) -> int:
        return len(self.draft_tokens)

    @property
    def models_run(self) -> list[str]:
        return sorted({c.role for c in self.calls})


@dataclass
class Fidelity:
    """How close the output is to what the full model itself would say, as a machine and as a reader sees it.

    Token view: common prefix, identity, teacher-forced agreement and NLL. Reader's view
    (core.analysis.textdiff): the share of words inserted, deleted or substituted against the full model's
    own greedy output, and the differing spans. Task view (core.analysis.expectations): for prompts that
    carry expectations, each one checked on this output (`met`) and on the full model's (`full_met`).
    """

    reference_tokens: int  # length of the full model's own greedy continuation
    common_prefix: int  # tokens identical to it, from the start
    identical: bool
    full_agreement: float | None  # share of output tokens that are the full model's argmax given the output so far
    full_nll: float | None  # full model's mean negative log-likelihood of the output (nats/token); both None until
    # the teacher-forced pass ran (a grid point's, after the τ_accept line: app.prefetch)
    words_differing: float = 0.0  # word edits / words in the longer text (core.analysis.textdiff)
    word_edits: int = 0
    output_words: int = 0
    reference_words: int = 0
    differing_spans: list[WordSpan] = field(default_factory=list)
    expectations: list[ExpectationCheck] = field(default_factory=list)
    numerics_words: float | None = None  # classic SD's own words_differing, same drafter and dtype (fidelity.py)
    against: str = "plain greedy"  # the reference: the full model's plain greedy answer, or first (reduced
    # precision, core.analysis.fast_reference) "classic SD": the run's tiers-off twin, while plain greedy decodes

    @property
    def tiers_words(self) -> float | None:
        """Words differing beyond what numerics explain: the part the tiers changed (None: not separated)."""
        return None if self.numerics_words is None else max(0.0, self.words_differing - self.numerics_words)

    @property
    def expectations_met(self) -> int:
        return sum(c.met for c in self.expectations)

    @property
    def full_expectations_met(self) -> int:
        return sum(bool(c.full_met) for c in self.expectations)

    @classmethod
    def from_dict(cls, data: dict) -> Fidelity:
        data = dict(data)
        data["differing_spans"] = [
            WordSpan(**{**s, "output_words": tuple(s["output_words"]), "reference_words": tuple(s["reference_words"])})
            for s in data.get("differing_spans", [])]
        data["expectations"] = [ExpectationCheck(**c) for c in data.get("expectations", [])]
        return cls(**data)


@dataclass
class Trace:
    """Everything one run did. `metrics` (core.analysis.metrics) and the app read only this."""

    prompt: str
    prompt_token_count: int
    config: DecodeConfig  # a dict (old traces, walkthrough files) is read as a DecodeConfig over the defaults
    models: dict[str, Any]
    tokens: list[TokenRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    wall_s: float = 0.0
    stop_reason: str = "running"  # eos | max_new_tokens | cancelled | time-budget | running
    fidelity: Fidelity | None = None
    plain_cost_units: float = 0.0  # what plain decoding would cost for these tokens (prefill included), same model
    rolled_back: list[TokenRecord] = field(default_factory=list)  # tokens an audit cut from the output, in order
    cost_profile: str = DEFAULT_PROFILE  # the cost profile that priced every call (core/profiles), named once
    cost_label: str = ""  # that profile's one-line label, for screens
    prefill_units: float = 0.0  # what the full model's pass over the prompt costs (plain decoding pays it once)
    equals_full_greedy: bool = False  # by construction the full model's own greedy output (see `exact_by_construction`)
    policy: RoundPolicy | None = None  # what the engine made of the settings (a trace without one: derived from them)

    def __post_init__(self) -> None:
        if isinstance(self.config, dict):
            self.config = DecodeConfig.from_dict(self.config)
        if isinstance(self.policy, dict):
            self.policy = RoundPolicy.from_dict(self.policy)
        elif self.policy is None:  # recorded before policies were stamped: the same derivation the engine made
            self.policy = RoundPolicy.of(self.config)

    def is_copy(self, t: TokenRecord) -> bool:
        """Whether a drafted token was a prompt-lookup copy (recorded with it; a trace from before that: its drafter's
        kind, and for a hybrid drafter whether its round ran no drafter model)."""
        if t.inputs is not None:
            return t.inputs.is_copy
        if self.policy.drafts is not DraftKind.HYBRID:
            return self.policy.drafts is DraftKind.COPY
        rounds = [r for r in self.rounds if r.index == t.round]
        return bool(rounds) and not any(c.role == "drafter" for c in rounds[0].calls)

    def plain_cost_after(self, tokens: int) -> float:
        """What plain decoding pays for the first `tokens` tokens: the prompt's prefill, then one pass per token
        (a trace recorded before the prefill was priced: one unit per token)."""
        if not self.prefill_units:
            return float(tokens)
        return self.prefill_units + tokens - 1 if tokens else 0.0

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)

    @property
    def partial(self) -> bool:
        """True when the run was cut short (stopped by the user or out of time), not finished."""
        return self.stop_reason in ("cancelled", "time-budget")

    @property
    def token_ids(self) -> list[int]:
        return [t.token_id for t in self.tokens]

    def decisions(self) -> list[TokenRecord | UnwrittenDecision]:
        """Every draft token the tier rule decided: those written (in the answer or cut by an audit) and those a
        refusal left unwritten."""
        written = [t for t in [*self.tokens, *self.rolled_back] if t.draft_confidence is not None]
        return written + [r.unwritten for r in self.rounds if r.unwritten is not None]

    def to_dataframe(self) -> pd.DataFrame:
        """One row per generated token, the tier rule's recorded inputs as columns of their own."""
        columns = [f.name for f in fields(TokenRecord) if f.name != "inputs"] + [f.name for f in fields(TierInputs)]
        rows = [{**asdict(t), **(asdict(t.inputs) if t.inputs else {})} for t in self.tokens]
        return pd.DataFrame(rows, columns=columns)

    def rounds_dataframe(self) -> pd.DataFrame:
        rows = []
        for r in self.rounds:
            row = {"round": r.index, "drafted": r.drafted, "accepted": r.accepted, "emitted": r.emitted,
                   "rolled_back": r.rolled_back,
                   "wall_s": r.wall_s, "models_run": "+".join(r.models_run)}
            for role in ("drafter", "slim", "full"):
                mine = [c for c in r.calls if c.role == role]
                row[f"{role}_calls"] = len(mine)
                row[f"{role}_cost_units"] = sum(c.cost_units for c in mine)
            rows.append(row)
        return pd.DataFrame(rows)

    def exact_by_construction(self) -> bool:
        """Greedy, the exact rule, and every token decided by the full model or kept on trust and audited by it:
        the output is then the full model's own greedy output (the engine stamps `equals_full_greedy` with it)."""
        if not self.config.greedy or self.config.verify_rule != "exact":
            return False
        return all(t.tier == Tier.FULL or t.audit == Audit.AUDITED for t in self.tokens)

    def to_json(self) -> str:
        data = asdict(self)
        data["policy"] = self.policy.to_dict()
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        data = json.loads(text)
        data["tokens"] = [TokenRecord(**t) for t in data["tokens"]]
        data["rolled_back"] = [TokenRecord(**t) for t in data.get("rolled_back", [])]
        rounds = []
        for r in data["rounds"]:
            r["calls"] = [CallRecord(**c) for c in r["calls"]]
            rounds.append(RoundRecord(**r))
        data["rounds"] = rounds
        data["fidelity"] = Fidelity.from_dict(data["fidelity"]) if data["fidelity"] else None
        return cls(**data)
