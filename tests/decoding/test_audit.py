"""Audited copies (`copy_evidence="audit"`): tier 1 keeps confident copies provisionally and the full
model's next pass, which must process them anyway, audits them and cuts the output back at a refusal.

Claims tested as invariants, each with the path it covers asserted (refusals and rollbacks happened):
greedy output equals plain greedy decoding whatever the thresholds and the audit span; sampling
follows the full model's distribution; the trace stays consistent after cuts; no answer ends
unaudited. The same runs with `copy_evidence="statistic"` differ from plain, so these tests can fail.
"""

import pytest
from test_engine import assert_follows_the_full_model, greedy_without_cache
from tiny import tiny_bundle

from core import DecodeConfig, generate, summarize
from core.decoding import adaptive
from core.decoding.adaptive import TRUST_AFTER, TrustAudit
from core.decoding.drafters import PromptLookupDrafter
from core.errors import ConfigError
from core.trace import Trace
from core.vocabulary import Audit, Reason, Tier, Why

PROMPT = "the cat sat on the mat. the cat sat on the mat and the dog sat on the log. the cat"
AUDIT = DecodeConfig(mode="via", drafter="ngram", gamma=1, max_new_tokens=60, chat_template=False,
                     tau_accept=0.2, tau_slim=1.0, copy_evidence="audit", audit_span=8, slim_route="skip-middle-25")


@pytest.fixture(scope="module")
def bundle():
    """Middle layers quieted: the model agrees with copies often enough to be trusted, not always."""
    return tiny_bundle("llama", layers=6, avoid_eos=True, middle_scale=0.1)


@pytest.fixture(autouse=True)
def trust_sooner(monkeypatch):
    """The mechanism tests trust a copy after one whole copy kept (this random model rarely keeps two in a
    row); the trust-signal test below uses the engine's own TRUST_AFTER."""
    monkeypatch.setattr(adaptive, "TRUST_AFTER", 1)


@pytest.fixture(scope="module")
def plain(bundle):
    ids = bundle.verifier.tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    return greedy_without_cache(bundle.verifier.model, ids, AUDIT.max_new_tokens)


@pytest.mark.parametrize("tau_accept", [0.0, 0.2, 0.6])
@pytest.mark.parametrize("span", [1, 4, 32])
def test_audited_copies_reproduce_plain_greedy_decoding(bundle, plain, tau_accept, span):
    trace = generate(bundle, PROMPT, AUDIT.with_(tau_accept=tau_accept, audit_span=span), replay=False)
    assert trace.token_ids == plain
    m = summarize(trace)
    trusted = [t for t in trace.tokens + trace.rolled_back if t.tier == Tier.DRAFT]
    assert trusted, "no copy was kept on trust: the audit was never exercised"
    if tau_accept < 0.6:
        assert m["rolled_back"] > 0 and any(t.reason == Reason.AUDIT_REFUSED for t in trace.tokens)


def test_copies_are_trusted_only_after_the_full_model_kept_whole_copies(bundle, monkeypatch):
    """The audit's trust signal is model evidence: after a refusal, copies are verified again until the
    full model has kept a whole copy in TRUST_AFTER rounds in a row."""
    monkeypatch.setattr(adaptive, "TRUST_AFTER", TRUST_AFTER)
    assert TRUST_AFTER >= 2
    trace = generate(bundle, PROMPT, AUDIT.with_(tau_accept=0.0))
    refused_rounds = {t.round for t in trace.tokens if t.reason == Reason.AUDIT_REFUSED}
    assert refused_rounds
    for r in refused_rounds:
        following = [t for t in trace.tokens + trace.rolled_back if t.round == r + 1]
        assert all(t.tier != Tier.DRAFT for t in following), r
    first_trusted = min(t.round for t in trace.tokens + trace.rolled_back if t.tier == Tier.DRAFT)
    judged = [r for r in trace.rounds[:first_trusted] if r.drafted]
    assert len(judged) >= TRUST_AFTER
    assert all(r.accepted == r.drafted for r in judged[-TRUST_AFTER:])  # whole copies kept just before


def test_trusting_the_statistic_alone_differs_where_the_audit_does_not(bundle, plain):
    statistic = generate(bundle, PROMPT, AUDIT.with_(copy_evidence="statistic"))
    assert statistic.token_ids != plain, "this prompt must copy something the model would not say"


def test_with_the_slim_verifier_on_its_tokens_are_audited_too(bundle, plain):
    trace = generate(bundle, PROMPT, AUDIT.with_(tau_accept=0.3, tau_slim=0.0), replay=False)
    assert trace.token_ids == plain
    assert any(t.tier == Tier.SLIM for t in trace.tokens + trace.rolled_back)


def test_the_trace_stays_consistent_after_cuts(bundle):
    trace = generate(bundle, PROMPT, AUDIT)
    tokenizer = bundle.verifier.tokenizer
    assert [t.position for t in trace.tokens] == list(range(len(trace.tokens)))
    assert trace.text == tokenizer.decode(trace.token_ids, skip_special_tokens=False)
    cut_earlier = sum(r.rolled_back for r in trace.rounds)
    assert 0 < cut_earlier <= len(trace.rolled_back) == summarize(trace)["rolled_back"]
    assert all(t.tier in (1, 2) for t in trace.rolled_back), "only tokens no full pass had seen can be cut"
    refusals = [t for t in trace.tokens if t.reason == Reason.AUDIT_REFUSED]
    assert refusals and all(t.outcome == "full-corrected" and t.full_confidence is not None for t in refusals)
    again = Trace.from_json(trace.to_json())
    assert again.rolled_back == trace.rolled_back and again.token_ids == trace.token_ids
    assert trace.rounds_dataframe()["rolled_back"].sum() == cut_earlier
    unwritten = [r.unwritten for r in trace.rounds if r.unwritten is not None]
    refused_in = {t.round for t in refusals}
    assert unwritten and {u.round for u in unwritten} <= refused_in, "a token is left unwritten only by a refusal"
    assert all(u.tier == Tier.FULL for u in unwritten), "only a token sent to the full model asks for its pass"
    assert again.decisions() == trace.decisions() and all(u in trace.decisions() for u in unwritten)


def test_a_full_span_of_waiting_tokens_calls_the_full_verifier(bundle, plain):
    trace = generate(bundle, PROMPT, AUDIT.with_(gamma=1, tau_accept=0.0, audit_span=1))
    assert trace.token_ids == plain
    assert any(t.reason == Reason.AUDIT_DUE for t in trace.tokens + trace.rolled_back)


@pytest.mark.parametrize("max_new_tokens", [23, 41])
def test_no_answer_ends_on_an_unaudited_copy(bundle, plain, max_new_tokens):
    trace = generate(bundle, PROMPT, AUDIT.with_(tau_accept=0.0, audit_span=64, max_new_tokens=max_new_tokens))
    assert trace.token_ids == plain[:max_new_tokens]
    assert trace.tokens[-1].tier == Tier.FULL
    assert any(t.tier == Tier.DRAFT for t in trace.tokens + trace.rolled_back)


def test_audited_copies_sample_from_the_full_model(bundle, monkeypatch):
    """Every copy trusted (tau_accept 0, trust granted from the first round so that every seed
    exercises the audit), three tokens: each position follows the full model's distribution, as a
    deterministic proposal judged by rejection sampling should."""
    monkeypatch.setattr(TrustAudit, "trusted", property(lambda self: True))
    temperature = 1.0
    config = AUDIT.with_(tau_accept=0.0, audit_span=64, max_new_tokens=3, temperature=temperature)
    traces = [generate(bundle, PROMPT, config.with_(seed=seed)) for seed in range(1500)]
    assert sum(bool(t.rolled_back) for t in traces) > 100, "the audit must refuse copies often here"
    ids = bundle.verifier.tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    for position in range(3):
        assert_follows_the_full_model(bundle.verifier.model, ids, [t.token_ids for t in traces], position, temperature)


def test_prompt_lookup_cuts_its_copy_at_the_first_unlikely_token():
    tokens = [1, 2, 3, 9, 1, 2, 3, 8, 7, 1, 2, 3]  # "1 2 3" continued with 9 once and with 8 once
    full = PromptLookupDrafter(3).propose(tokens, 4)
    assert full.tokens == [8, 7, 1, 2] and full.confidences[0] == pytest.approx(0.5)
    assert PromptLookupDrafter(3, stop_below=0.6).propose(tokens, 4).tokens == []
    assert PromptLookupDrafter(3, stop_below=0.5).propose(tokens, 4).tokens == [8, 7, 1, 2]


def test_tier_two_can_be_switched_off_under_any_tau_accept_and_the_span_is_checked():
    assert DecodeConfig(tau_accept=0.3, tau_slim=1.0).validate()
    with pytest.raises(ConfigError, match="out of order"):
        DecodeConfig(tau_accept=0.3, tau_slim=0.9).validate()
    with pytest.raises(ConfigError, match="audit_span"):
        AUDIT.with_(audit_span=0).validate()


@pytest.mark.parametrize("span", [1, 4, 32])
def test_each_token_records_its_audit_state_and_the_round_that_audited_or_cut_it(bundle, span):
    """Record once: the engine stamps every copy kept on trust with its audit (no reader re-derives it)."""
    trace = generate(bundle, PROMPT, AUDIT.with_(audit_span=span), replay=False)
    assert trace.stop_reason in ("eos", "max_new_tokens") and trace.rolled_back
    for t in trace.tokens:  # a finished answer: every copy kept on trust was audited, by a later or its own round
        assert t.audit == (Audit.AUDITED if t.tier != Tier.FULL else Audit.NONE)
        assert (t.audit_round is not None and t.audit_round >= t.round) == (t.audit == Audit.AUDITED)
    corrections = {t.round: t for t in trace.tokens if t.reason == Reason.AUDIT_REFUSED}
    for t in trace.rolled_back:  # a cut token: the refused copy first, then what was cut with it, all by one round
        assert t.audit in (Audit.REFUSED, Audit.CUT) and t.audit_round in corrections
        assert t.audit_at(t.audit_round - 1) == Audit.TRUSTED and t.audit_at(t.audit_round) == t.audit
    for round_index in corrections:
        cut = [t for t in trace.rolled_back if t.audit_round == round_index]
        assert cut[0].audit == Audit.REFUSED and all(t.audit == Audit.CUT for t in cut[1:])
        assert cut[0].position == corrections[round_index].position  # the correction took the refused copy's place
        assert sum(t.round < round_index for t in cut) == trace.rounds[round_index].rolled_back
    assert all(t.verdict in {w.value for w in Why} for t in trace.tokens + trace.rolled_back)
    assert trace.equals_full_greedy


def test_a_run_stopped_before_its_audit_records_pending_copies_and_is_not_exact(bundle):
    for stop_after in range(2, 40):  # the first stop that leaves copies waiting for their audit
        rounds = iter(range(1000))
        trace = generate(bundle, PROMPT, AUDIT.with_(audit_span=32, tau_accept=0.0), replay=True,
                         should_stop=lambda: next(rounds) >= stop_after)  # noqa: B023 (used at once)
        pending = [t for t in trace.tokens if t.audit == Audit.TRUSTED]
        if pending:
            break
    assert trace.partial and pending, "no copy was pending when the run stopped"
    assert all(t.audit_round is None and t.tier != Tier.FULL for t in pending)
    assert not trace.equals_full_greedy and not trace.exact_by_construction()
    assert not generate(bundle, PROMPT, AUDIT.with_(copy_evidence="statistic", tau_accept=0.0),
                        replay=False).equals_full_greedy  # copies kept on the statistic alone, never audited
