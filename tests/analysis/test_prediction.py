"""The live prediction calls the engine's own tier rule: on a real re-route's output it routes every token
as the engine did, with copies, the audit and the slim gate in play (gamma 1, greedy: rounds line up)."""

import pytest
from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.analysis.prediction import predict_tiers, route_positions
from core.analysis.reliability import measure
from core.decoding import adaptive

PROMPT = "the cat sat on the mat. the cat sat on the mat and the dog sat on the log. the cat"
BASE = DecodeConfig(mode="via", drafter="ngram", gamma=1, max_new_tokens=48, chat_template=False,
                    slim_route="skip-middle-25", ngram_size=2)


@pytest.fixture(scope="module")
def bundle():
    """Middle layers quieted: the model agrees with copies often, not always."""
    return tiny_bundle("llama", layers=6, avoid_eos=True, middle_scale=0.1)


SETTINGS = {
    "copies need a verifier": dict(copy_evidence="verifier", tau_accept=0.3, tau_slim=0.2),
    "copies on the statistic": dict(copy_evidence="statistic", tau_accept=0.7, tau_slim=1.0),
    "copies with slim evidence": dict(copy_evidence="slim", tau_accept=0.3, tau_slim=0.2),
    "audited copies": dict(copy_evidence="audit", tau_accept=0.0, tau_slim=1.0, audit_span=3),
    "audited copies and tier 2": dict(copy_evidence="audit", tau_accept=0.3, tau_slim=0.2, audit_span=4),
    "slim gate": dict(copy_evidence="verifier", tau_accept=0.3, tau_slim=0.2, slim_min_hit_rate=0.9),
    "self drafter, audited": dict(drafter="self", copy_evidence="audit", tau_accept=0.5, tau_slim=0.3),
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_prediction_routes_every_token_of_a_real_run_as_the_engine_did(bundle, name, monkeypatch):
    monkeypatch.setattr(adaptive, "TRUST_AFTER", 1)  # this random model rarely keeps two copies in a row
    config = BASE.with_(**SETTINGS[name]).validate()
    trace = generate(bundle, PROMPT, config, replay=False)
    data = measure(bundle, PROMPT, config, trace.token_ids)
    decisions, _ = route_positions(data, config)
    assert [(int(d.tier), d.reason.value) for d in decisions] == [(t.tier, t.reason) for t in trace.tokens]
    tiers = {t.tier for t in trace.tokens}
    assert len(tiers) >= 2, f"{name}: the run should use more than one tier"
    shares = predict_tiers(data, config.tau_accept, config.tau_slim).tier_share
    assert shares == pytest.approx({tier: sum(t.tier == tier for t in trace.tokens) / len(trace.tokens)
                                    for tier in (1, 2, 3)})


def test_with_default_settings_the_prediction_shows_no_tier_one_copies(bundle):
    """The bug this fixes: copies never take tier 1 under copy_evidence "verifier", and now nor does the
    prediction (it used to route copies by their statistic alone)."""
    config = BASE.with_(tau_accept=0.0, tau_slim=1.0).validate()
    data = measure(bundle, PROMPT, config, generate(bundle, PROMPT, config).token_ids)
    assert predict_tiers(data, 0.0, 1.0).tier_share[1] == 0.0
    assert predict_tiers(data, 0.0, 1.0, config=config.with_(copy_evidence="statistic")).tier_share[1] > 0.3
