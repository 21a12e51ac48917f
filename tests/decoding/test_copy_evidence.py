"""Copies need model evidence: how `copy_evidence` changes what tier 1 takes for a prompt-lookup draft."""

import pytest
from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.analysis.metrics import summarize
from core.decoding.adaptive import SlimGate
from core.decoding.tiers import TierFacts, decide_tier
from core.errors import ConfigError
from core.round_policy import RoundPolicy
from core.vocabulary import CopyEvidence, DraftKind, Reason, Tier, TierDecision

PROMPT = "the cat sat on the mat. the cat sat on the"
BASE = DecodeConfig(mode="via", drafter="ngram", gamma=4, max_new_tokens=24, chat_template=False,
                    slim_route="skip-middle-25", tau_accept=0.5, tau_slim=0.5)


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle("llama", layers=6)


def never() -> float:
    raise AssertionError("the slim verifier must not run here")


def policy(evidence: str) -> RoundPolicy:
    """VIA-SD at tau_accept 0.5 with tier 2 off, greedy, prompt lookup, copies needing `evidence`."""
    return RoundPolicy(mode="via", drafts=DraftKind.HYBRID, tau_accept=0.5, tau_slim=1.0,
                       copy_evidence=CopyEvidence(evidence), greedy=True)


def copy_rule(statistic: float, evidence: str, agreement=never, **facts) -> TierDecision:
    """The tier rule for a copy whose statistic is `statistic` (tau_accept 0.5, tier 2 off)."""
    return decide_tier(TierFacts(statistic, never, agreement, is_copy=True, **facts), policy(evidence))


def test_a_copy_passes_tier_one_only_as_far_as_the_slim_verifier_agrees():
    assert copy_rule(0.9, "slim", lambda: 0.3) == TierDecision(Tier.FULL, Reason.COPY_NEEDS_EVIDENCE)
    assert copy_rule(0.9, "slim", lambda: 0.95) == TierDecision(Tier.DRAFT, Reason.DRAFT_CONFIDENT)
    assert copy_rule(0.4, "slim").reason is Reason.NOT_CONFIDENT  # below tau_accept: no slim pass on its account
    assert copy_rule(0.9, "slim", full_already_ran=True).reason is Reason.FREE_VERDICT  # the full verdict decides
    assert copy_rule(0.9, "slim", slim_open=False).reason is Reason.COPY_NEEDS_EVIDENCE  # a shut gate: no evidence


def test_statistic_verifier_and_audit_settings_and_model_drafts():
    assert copy_rule(0.9, "statistic").tier is Tier.DRAFT
    assert copy_rule(0.9, "verifier").reason is Reason.COPY_NEEDS_EVIDENCE
    assert copy_rule(0.9, "audit", copies_trusted=True).tier is Tier.DRAFT
    assert copy_rule(0.9, "audit", copies_trusted=False).reason is Reason.COPY_NEEDS_EVIDENCE
    assert copy_rule(0.9, "audit", audit_due=True) == TierDecision(Tier.FULL, Reason.AUDIT_DUE)
    assert copy_rule(0.9, "statistic", audit_due=True).tier is Tier.DRAFT  # only copies kept on trust are audited
    modelled = decide_tier(TierFacts(0.9, never, never), policy("verifier"))
    assert modelled.tier is Tier.DRAFT  # a model's belief: evidence rules are for copies
    audited = decide_tier(TierFacts(0.9, never, never, audit_due=True), policy("audit"))
    assert audited.reason is Reason.AUDIT_DUE  # a model's greedy draft waits on trust under "audit" too


def test_copies_kept_by_the_statistic_alone_and_never_without_a_verifier(bundle):
    plain = generate(bundle, PROMPT, BASE.with_(mode="plain"))
    trusting = generate(bundle, PROMPT, BASE.with_(tau_accept=0.0, tau_slim=0.0, copy_evidence="statistic"))
    assert any(t.tier == 1 for t in trusting.tokens)  # the old behaviour: copies kept with no model run
    checked = generate(bundle, PROMPT, BASE.with_(tau_accept=0.0, tau_slim=0.0, copy_evidence="verifier"))
    assert not any(t.tier == 1 for t in checked.tokens)
    full_only = generate(bundle, PROMPT, BASE.with_(tau_accept=0.0, tau_slim=0.0, copy_evidence="verifier",
                                                    slim_route="full"))
    assert full_only.token_ids == plain.token_ids  # slim = full model: every copy judged by the full model


def test_unknown_copy_evidence_is_one_clear_error():
    with pytest.raises(ConfigError, match="copy_evidence"):
        BASE.with_(copy_evidence="trust-me").validate()


def test_slim_gate_shuts_while_its_passes_do_not_spare_full_passes_and_probes_to_reopen():
    gate = SlimGate(min_hit_rate=0.5, window=4, probe_every=3)
    for _ in range(4):
        assert gate.allows()  # too little history to judge
        gate.record(slim_ran=True, full_ran=True)  # a miss: the full pass ran anyway
    assert [gate.allows() for _ in range(6)] == [False, False, True, False, False, True]
    for _ in range(4):
        gate.record(slim_ran=True, full_ran=False)  # probes that hit reopen it
    assert gate.allows()
    gate.record(slim_ran=False, full_ran=True)  # rounds without a slim pass say nothing about it
    assert gate.allows()
    assert all(SlimGate(0.0, window=1).allows() for _ in range(3))  # 0 never skips


def test_a_shut_gate_saves_slim_passes_that_never_spared_a_full_pass():
    bundle = tiny_bundle("llama", layers=5)  # this one writes 60 tokens before its stop token
    # Tier 1 off and a random tiny slim verifier never 0.99 sure: every slim pass is followed by a full pass.
    config = BASE.with_(tau_accept=1.0, tau_slim=0.99, max_new_tokens=60)
    plain = generate(bundle, PROMPT, config.with_(mode="plain"))
    ungated = generate(bundle, PROMPT, config, replay=False)
    gated = generate(bundle, PROMPT, config.with_(slim_min_hit_rate=0.5), replay=False)
    assert gated.token_ids == ungated.token_ids == plain.token_ids and len(plain.tokens) == 60
    slim_calls = summarize(gated)["slim_calls"]
    assert slim_calls < summarize(ungated)["slim_calls"]
    assert slim_calls <= 8 + len(gated.rounds) // 8 + 1  # the window, then one probe per 8 skipped rounds


def test_a_confident_copy_refused_for_lack_of_evidence_records_why(bundle):
    """With tier 2 off, a copy whose statistic clears tau_accept goes to the full model, and the trace
    says why (copy-needs-evidence), not the misleading "not confident"."""
    config = BASE.with_(tau_accept=0.3, tau_slim=0.3, copy_evidence="verifier", slim_route="full")
    trace = generate(bundle, PROMPT, config.with_(tau_slim=0.3))
    statistic = generate(bundle, PROMPT, config.with_(copy_evidence="statistic"))
    trusted = [t for t in statistic.tokens if t.reason == "draft-confident"]
    assert trusted, "the statistic alone should pass tier 1 on this repetitive prompt"
    needs = [t for t in trace.tokens if t.reason == "copy-needs-evidence"]
    assert needs and all(t.tier == 3 and t.draft_confidence >= 0.3 for t in needs)
    assert not any(t.tier == 1 for t in trace.tokens)
