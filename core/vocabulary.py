"""The project's vocabulary: the value types every layer shares, at the bottom of the import graph.

Everything a trace, a chart or a caption names once is defined here: who decided a token (`Tier`), what it
did (`Outcome`), why that tier (`Reason`), what the deciding rule said (`Why`), where a copy kept on trust
stands (`Audit`); the word-diff and expectation values fidelity records; the names of the confidence
signals, of the lossy verification rules and of the default cost profile. This module imports nothing of
the project but `core.errors`, so `trace`, `config` and `models` can use these names without reaching up
into `decoding` or `analysis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum

from core.errors import ConfigError

# Who decided a token, what it did and why (recorded per token by the engine; core.decoding.tiers decides).

class Tier(IntEnum):
    """Who resolved a token."""

    DRAFT = 1  # tier 1: the drafter was confident; no verifier ran for it
    SLIM = 2  # tier 2: the slim (routed) verifier was confident and decided
    FULL = 3  # tier 3: the full verifier decided


class _Word(str, Enum):
    """A string enum that prints as its value (Python 3.10 has no `enum.StrEnum`)."""

    def __str__(self) -> str:
        return str(self.value)


class Outcome(_Word):
    """What the resolving tier did with the token."""

    DIRECT_ACCEPT = "direct-accepted"
    SLIM_ACCEPT = "slim-accepted"
    SLIM_REGENERATE = "slim-regenerated"
    FULL_ACCEPT = "full-accepted"
    FULL_CORRECT = "full-corrected"
    FULL_BONUS = "full-bonus"
    PLAIN = "plain"


class Reason(_Word):
    """Why a token went to the tier that resolved it (recorded per token in the trace)."""

    DRAFT_CONFIDENT = "draft-confident"  # tier 1: drafter confidence >= tau_accept
    SLIM_CONFIDENT = "slim-confident"  # tier 2: drafter below tau_accept, slim confidence >= tau_slim
    NOT_CONFIDENT = "not-confident"  # tier 3: below tau_accept and below tau_slim (or those tiers off)
    FREE_VERDICT = "free-verdict"  # tier 3: the full pass already ran this round; its verdict costs nothing
    COPY_NEEDS_EVIDENCE = "copy-needs-evidence"  # tier 3: a confident copy with no model evidence for it
    AUDIT_DUE = "audit-due"  # tier 3: audit_span kept tokens already await the full model's audit
    AUDIT_REFUSED = "audit-refused"  # tier 3: the full model refused an earlier trusted copy; its token replaces it
    STOP_TOKEN = "stop-token"  # tier 3: a stop token skips tier 1 (it would end the answer unverified)
    BONUS = "bonus"  # tier 3: the full pass's own next token after a fully kept draft
    NO_DRAFT = "no-draft"  # tier 3: nothing was drafted (plain decoding, or no prompt-lookup match)


class Why(_Word):
    """What the deciding rule said about a token (recorded per token as `TokenRecord.verdict`)."""

    ARGMAX = "argmax"  # the verifier's own top choice: kept by every rule
    ARGMAX_DIFFERS = "argmax differs"  # exact, greedy: the verifier's top choice replaces the draft
    RATIO_KEPT = "accepted w.p. min(1, q/p)"  # sampling, target q: speculative rejection sampling kept it
    RESAMPLED = "resampled from max(0, q - p)"  # sampling: replaced from the residual
    TRUSTED = "draft trusted, no verifier ran"  # tier 1
    OWN_TOKEN = "full verifier's own next token"  # a bonus, or the only token of a round with no draft
    WITHIN_ROLLBACK = "within rollback"  # BiLD: not the argmax, but -log q(x) <= rollback threshold
    ROLLED_BACK = "rolled back"  # BiLD: -log q(x) > rollback: replaced by the verifier's choice
    NOT_DEFERRED = "not deferred: draft kept"  # cascade: pi = p, so the draft stands
    NOT_DEFERRED_REPLACED = "not deferred: drafter's argmax"  # cascade, greedy, draft was not p's argmax
    DEFERRED_KEPT = "deferred: argmax"  # cascade: pi = q and the draft is q's argmax
    DEFERRED_REPLACED = "deferred: argmax differs"  # cascade: pi = q and the draft is not q's argmax


class Audit(_Word):
    """Where a token stands with the audit of copies kept on trust (copy_evidence "audit"; recorded per token)."""

    NONE = "none"  # not kept on trust: a verifier decided it before it was kept (or nothing is audited)
    TRUSTED = "trusted"  # kept on trust; the full model's audit is still pending
    AUDITED = "audited"  # kept on trust; a later full pass audited it and it stands
    REFUSED = "refused"  # kept on trust; the full model refused it: cut from the output (Trace.rolled_back)
    CUT = "cut"  # cut from the output with an earlier copy the audit refused (Trace.rolled_back)


class CopyEvidence(_Word):
    """What model evidence tier 1 needs before it keeps a prompt-lookup copy (`DecodeConfig.copy_evidence`)."""

    SLIM = "slim"  # the slim verifier must also give the copied token >= tau_accept
    VERIFIER = "verifier"  # none suffices: a verifier decides every copy
    STATISTIC = "statistic"  # the lookup statistic alone (no model in the loop)
    AUDIT = "audit"  # kept on trust once copies proved reliable; the full model's next pass audits them


class DraftKind(_Word):
    """Which kinds of draft a run's drafter makes (`DecodeConfig.drafter` in a mode that drafts)."""

    NONE = "none"  # plain decoding: nothing is drafted
    MODEL = "model"  # a model's tokens, with its distribution (a separate model, or the verifier routed)
    COPY = "copy"  # prompt lookup: copies of earlier text, scored by a statistic, no distribution
    HYBRID = "hybrid"  # a copy when the text offers a confident one, else the separate model's tokens


OUTCOME_TIER = {
    Outcome.DIRECT_ACCEPT: Tier.DRAFT,
    Outcome.SLIM_ACCEPT: Tier.SLIM,
    Outcome.SLIM_REGENERATE: Tier.SLIM,
    Outcome.FULL_ACCEPT: Tier.FULL,
    Outcome.FULL_CORRECT: Tier.FULL,
    Outcome.FULL_BONUS: Tier.FULL,
    Outcome.PLAIN: Tier.FULL,
}

REASON_TIER = {
    Reason.DRAFT_CONFIDENT: Tier.DRAFT,
    Reason.SLIM_CONFIDENT: Tier.SLIM,
    Reason.NOT_CONFIDENT: Tier.FULL,
    Reason.FREE_VERDICT: Tier.FULL,
    Reason.COPY_NEEDS_EVIDENCE: Tier.FULL,
    Reason.AUDIT_DUE: Tier.FULL,
    Reason.AUDIT_REFUSED: Tier.FULL,
    Reason.STOP_TOKEN: Tier.FULL,
    Reason.BONUS: Tier.FULL,
    Reason.NO_DRAFT: Tier.FULL,
}


@dataclass(frozen=True)
class TierDecision:
    """The tier rule's answer for one draft token: the tier that decides it, and why."""

    tier: Tier
    reason: Reason


# Word-level differences and task expectations (core.analysis.textdiff, core.analysis.expectations).

class EditKind(str, Enum):
    """How an output span differs from the reference span at the same place."""

    INSERTED = "inserted"  # words in the output that the reference does not have
    DELETED = "deleted"  # reference words missing from the output
    SUBSTITUTED = "substituted"  # output words standing where the reference has other words

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class WordSpan:
    """One maximal run of differing words. Indices are word positions; `*_words` are the words."""

    kind: str  # an EditKind value
    output_start: int
    output_words: tuple[str, ...]
    reference_start: int
    reference_words: tuple[str, ...]

    @property
    def edits(self) -> int:
        return max(len(self.output_words), len(self.reference_words))


class ExpectationKind(str, Enum):
    MUST_APPEAR = "must appear"
    MUST_NOT_APPEAR = "must not appear"
    FINAL_ANSWER = "final answer"

    def __str__(self) -> str:
        return str(self.value)


@dataclass
class ExpectationCheck:
    """One expectation checked against one text (`full_met`: the same check on the full model's own output)."""

    kind: str  # an ExpectationKind value
    term: str
    met: bool
    full_met: bool | None = field(default=None)


# Names of settings that core.config validates (their behaviour lives in core.decoding).

SIGNALS = {
    "prob": "probability of the chosen token",
    "margin": "top-1 minus top-2 probability",
    "entropy": "1 - entropy / log(vocabulary size)",
}


DEFERRAL_RULES = {
    "chow": "defer when max p < 1 - alpha (the drafter is unsure)",
    "diff": "defer when max q - max p > alpha (the verifier is surer than the drafter)",
    "opt": "defer when max q - max p > alpha * TV(p, q) (the paper's optimal rule, plug-in form)",
}


LOSSY_RULES = {
    "bild": "BiLD rollback: reject a draft token when -log q(token) > alpha (nats); exact at 0",
    "cascade-chow": "Speculative Cascade, Chow deferral: " + DEFERRAL_RULES["chow"] + "; exact at -1",
    "cascade-diff": "Speculative Cascade, Diff deferral: " + DEFERRAL_RULES["diff"] + "; exact at -1",
    "cascade-opt": "Speculative Cascade, OPT deferral: " + DEFERRAL_RULES["opt"] + "; exact at -2",
}


EXACT_ALPHA = {"bild": 0.0, "cascade-chow": -1.0, "cascade-diff": -1.0, "cascade-opt": -2.0}
"""Each lossy rule's exact setting: the `verify_alpha` at which it is classic speculative decoding again."""


def alpha_range(name: str) -> tuple[float, float]:
    """The meaningful range of `verify_alpha` for a lossy rule (its exact setting is the low end)."""
    if name == "bild":
        return 0.0, 1.0e6
    if isinstance(name, str) and name in LOSSY_RULES:
        return EXACT_ALPHA[name], 1.0
    raise ConfigError(f"verify_rule must be one of exact, {', '.join(LOSSY_RULES)}, not '{name}'")


def exact_alpha(name: str) -> float:
    """The `verify_alpha` at which rule `name` is classic speculative decoding."""
    return alpha_range(name)[0]


def check_alpha(name: str, alpha: float) -> None:
    """Raise one ConfigError when `alpha` is outside rule `name`'s range."""
    low, high = alpha_range(name)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not low <= alpha <= high:
        raise ConfigError(f"verify_alpha for '{name}' must be within [{low:g}, {high:g}], got {alpha}")


DEFAULT_PROFILE = "accelerator-modelled"
"""The cost profile traces are priced with unless one is chosen: the memory-bound accelerator model."""
