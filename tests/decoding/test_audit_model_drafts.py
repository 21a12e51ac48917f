"""Audited model drafts: under copy_evidence "audit" and greedy decoding, tokens a model
drafter's confidence (tier 1) or the slim verifier (tier 2) keeps are provisional; the full model's next pass
audits them and cuts the output back at the first it refuses. So greedy output equals plain greedy decoding
whatever the thresholds, and the same settings without the audit differ from it (these tests can fail)."""

import pytest
from tiny import tiny_bundle

from core import DecodeConfig, generate, summarize
from core.vocabulary import Reason

PROMPT = "the cat sat on the mat. the cat sat on the mat and the dog sat on the log. the cat"


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle("llama", layers=6, drafter_layers=2, avoid_eos=True, middle_scale=0.1)


def _run(bundle, **settings):
    config = DecodeConfig(mode="via", max_new_tokens=40, chat_template=False, gamma=4, slim_route="skip-middle-25",
                          **settings)
    return generate(bundle, PROMPT, config, replay=False)


@pytest.fixture(scope="module")
def plain(bundle):
    return generate(bundle, PROMPT, DecodeConfig(mode="plain", max_new_tokens=40, chat_template=False)).token_ids


@pytest.mark.parametrize("drafter", ["model", "self"])
@pytest.mark.parametrize("taus", [(0.0, 1.0), (0.3, 0.0), (0.5, 0.2)])
def test_audited_model_drafts_are_exact_in_greedy(bundle, plain, drafter, taus):
    trace = _run(bundle, drafter=drafter, tau_accept=taus[0], tau_slim=taus[1], copy_evidence="audit", audit_span=6)
    assert trace.token_ids == plain
    assert len(trace.token_ids) == len(set(t.position for t in trace.tokens)) == 40


def test_the_audit_refuses_and_cuts_back_where_trust_alone_drifts(bundle, plain):
    trusted = _run(bundle, drafter="model", tau_accept=0.0, tau_slim=1.0)  # every draft kept on trust, no audit
    audited = _run(bundle, drafter="model", tau_accept=0.0, tau_slim=1.0, copy_evidence="audit", audit_span=6)
    assert trusted.token_ids != plain  # the path is real: unaudited trust changes the output
    assert audited.token_ids == plain
    assert summarize(audited)["rolled_back"] > 0 or audited.rolled_back
    assert any(t.reason == Reason.AUDIT_REFUSED.value for t in audited.tokens)


def test_sampling_keeps_model_drafts_unaudited(bundle):
    """The audit of a model's draft is an argmax match: only greedy decoding uses it."""
    config = dict(drafter="model", tau_accept=0.0, tau_slim=1.0, temperature=0.8, seed=3)
    with_audit = _run(bundle, copy_evidence="audit", **config)
    without = _run(bundle, **config)
    assert with_audit.token_ids == without.token_ids and not with_audit.rolled_back
