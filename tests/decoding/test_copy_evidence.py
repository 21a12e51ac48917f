"""Copies need model evidence: how `copy_evidence` changes what tier 1 reads for a prompt-lookup draft."""

import math

import pytest
import torch
from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.analysis.metrics import summarize
from core.decoding.drafters import Draft
from core.decoding.engine import SlimGate, _Decoder
from core.errors import ConfigError

PROMPT = "the cat sat on the mat. the cat sat on the"
BASE = DecodeConfig(mode="via", drafter="ngram", gamma=4, max_new_tokens=24, chat_template=False,
                    slim_route="skip-middle-25", tau_accept=0.5, tau_slim=0.5)


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle("llama", layers=6)


class StubPass:
    """A verifier pass that has or has not run; `q` gives a fixed distribution, or fails if forbidden."""

    def __init__(self, probs=None, ran=False):
        self.probs, self.ran = probs, ran

    def q(self, j):
        if self.probs is None:
            raise AssertionError("the slim verifier must not run here")
        return self.probs


def one_hot_ish(token, p, vocab=43):
    probs = torch.full((vocab,), (1 - p) / (vocab - 1))
    probs[token] = p
    return probs


def decoder(bundle, evidence):
    return _Decoder(bundle, BASE.with_(copy_evidence=evidence), replay=True)


def test_a_copy_passes_tier_one_only_as_far_as_the_slim_verifier_agrees(bundle):
    copy = Draft(tokens=[7], confidences=[0.9], probs=None)
    slim = decoder(bundle, "slim")
    assert slim._draft_confidence(copy, 0, StubPass(one_hot_ish(7, 0.3)), StubPass()) == pytest.approx(0.3)
    assert slim._draft_confidence(copy, 0, StubPass(one_hot_ish(7, 0.95)), StubPass()) == pytest.approx(0.9)
    low = Draft(tokens=[7], confidences=[0.4], probs=None)  # below tau_accept: no slim pass on its account
    assert slim._draft_confidence(low, 0, StubPass(), StubPass()) == 0.4
    assert slim._draft_confidence(copy, 0, StubPass(), StubPass(ran=True)) == 0.9  # the full verdict decides anyway


def test_statistic_and_verifier_settings_and_model_drafts(bundle):
    copy = Draft(tokens=[7], confidences=[0.9], probs=None)
    assert decoder(bundle, "statistic")._draft_confidence(copy, 0, StubPass(), StubPass()) == 0.9
    assert decoder(bundle, "verifier")._draft_confidence(copy, 0, StubPass(), StubPass()) == -math.inf
    modelled = Draft(tokens=[7], confidences=[0.9], probs=[one_hot_ish(7, 0.9)])  # a model's belief: kept as is
    assert decoder(bundle, "verifier")._draft_confidence(modelled, 0, StubPass(), StubPass()) == 0.9


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
