"""Pure parts, no model: tier routing, confidence signals, config validation, metrics, verification rule."""

import math

import pytest
import torch

from core.analysis.metrics import summarize
from core.config import DecodeConfig
from core.decoding.confidence import confidence
from core.decoding.drafters import PromptLookupDrafter
from core.decoding.sampling import ExactRule, Sampler, Verdict, rejection_sample
from core.decoding.tiers import TierFacts, decide_tier, outcome_of
from core.errors import ConfigError
from core.round_policy import RoundPolicy, fires
from core.trace import CallRecord, RoundRecord, TokenRecord, Trace
from core.vocabulary import REASON_TIER, CopyEvidence, DraftKind, Outcome, Reason, Tier, TierDecision, Why


def never() -> float:
    raise AssertionError("the slim verifier must not run here")


def rule(draft: float, slim, tau_accept: float, tau_slim: float, **facts) -> TierDecision:
    """The tier rule for a model's draft token under VIA-SD at these thresholds (greedy, copies need a verifier)."""
    policy = RoundPolicy(mode="via", drafts=DraftKind.MODEL, tau_accept=tau_accept, tau_slim=tau_slim,
                         copy_evidence=CopyEvidence.VERIFIER, greedy=True)
    return decide_tier(TierFacts(draft, slim, never, **facts), policy)


def test_threshold_one_switches_a_tier_off_and_zero_takes_everything():
    assert not fires(1.0, 1.0)
    assert fires(0.0, 0.0)
    assert fires(0.7, 0.7) and not fires(0.69, 0.7)


def test_tier_one_fires_without_running_the_slim_verifier():
    assert rule(0.95, never, 0.9, 0.5, full_already_ran=False).tier is Tier.DRAFT


def test_slim_is_not_consulted_when_switched_off():
    assert rule(0.1, never, 0.9, 1.0, full_already_ran=False).tier is Tier.FULL


def test_slim_decides_when_confident_else_full():
    assert rule(0.1, lambda: 0.8, 0.9, 0.6, full_already_ran=False).tier is Tier.SLIM
    assert rule(0.1, lambda: 0.5, 0.9, 0.6, full_already_ran=False).tier is Tier.FULL


def test_a_full_verdict_already_paid_for_decides():
    assert rule(0.99, never, 0.9, 0.6, full_already_ran=True) == TierDecision(Tier.FULL, Reason.FREE_VERDICT)


def test_reasons_name_the_rule_that_fired_and_agree_with_the_tier():
    assert rule(0.95, never, 0.9, 0.5, full_already_ran=False).reason is Reason.DRAFT_CONFIDENT
    assert rule(0.1, lambda: 0.8, 0.9, 0.6, full_already_ran=False).reason is Reason.SLIM_CONFIDENT
    assert rule(0.1, lambda: 0.5, 0.9, 0.6, full_already_ran=False).reason is Reason.NOT_CONFIDENT
    stop = rule(0.99, lambda: 0.1, 0.9, 0.6, full_already_ran=False, stop_token=True)
    assert stop == TierDecision(Tier.FULL, Reason.STOP_TOKEN)
    assert rule(0.99, lambda: 0.8, 0.9, 0.6, full_already_ran=False, stop_token=True).tier is Tier.SLIM
    assert set(REASON_TIER) == set(Reason)
    for draft, slim, stop_token, ran in [(0.95, 0.1, False, False), (0.5, 0.7, False, False), (0.1, 0.1, False, False),
                                         (0.95, 0.1, True, False), (0.95, 0.95, False, True)]:
        decision = rule(draft, lambda s=slim: s, 0.9, 0.6, full_already_ran=ran, stop_token=stop_token)
        assert REASON_TIER[decision.reason] is decision.tier


def test_outcomes_name_tier_and_decision():
    assert outcome_of(Tier.DRAFT, True) is Outcome.DIRECT_ACCEPT
    assert outcome_of(Tier.SLIM, False) is Outcome.SLIM_REGENERATE
    assert outcome_of(Tier.FULL, True) is Outcome.FULL_ACCEPT
    assert outcome_of(Tier.FULL, False) is Outcome.FULL_CORRECT


def test_confidence_signals():
    probs = torch.tensor([0.7, 0.2, 0.1, 0.0])
    assert confidence(probs, 1, "prob") == pytest.approx(0.2)
    assert confidence(probs, 0, "margin") == pytest.approx(0.5)
    uniform = torch.full((4,), 0.25)
    assert confidence(uniform, 0, "entropy") == pytest.approx(0.0, abs=1e-6)
    assert confidence(torch.tensor([1.0, 0, 0, 0]), 0, "entropy") == pytest.approx(1.0)
    h = -(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1))
    assert confidence(probs, 0, "entropy") == pytest.approx(1 - h / math.log(4), rel=1e-5)


@pytest.mark.parametrize("changes, words", [
    ({"tau_accept": 1.5}, "tau_accept must be within [0, 1]"),
    ({"tau_slim": -0.1}, "tau_slim must be within [0, 1]"),
    ({"tau_accept": 0.5, "tau_slim": 0.8}, "thresholds out of order"),
    ({"gamma": 0}, "gamma"),
    ({"max_new_tokens": 100_000}, "max_new_tokens"),
    ({"mode": "fast"}, "mode must be one of"),
    ({"draft_signal": "vibes"}, "draft_signal"),
    ({"top_p": 0.0}, "top_p"),
    ({"seed": 2**63 + 1}, "seed"),
    ({"seed": 2**64 + 5}, "seed"),
])
def test_bad_settings_raise_one_clear_config_error(changes, words):
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        DecodeConfig(**changes).validate()


def test_prompt_lookup_drafts_from_repeats_and_nothing_without():
    drafter = PromptLookupDrafter(ngram_size=3)
    repeated = [5, 6, 7, 8, 9, 1, 2, 5, 6, 7]
    draft = drafter.propose(repeated, 3)
    assert draft.tokens == [8, 9, 1]
    assert draft.is_copy and draft.probs is None
    assert draft.confidences[0] == pytest.approx(1.0)
    assert drafter.propose([1, 2, 3, 4, 5], 3).tokens == []


def test_prompt_lookup_confidence_drops_for_short_or_ambiguous_matches():
    drafter = PromptLookupDrafter(ngram_size=3)
    # the bigram (1, 2) was followed once by 3 and once by 4: half the support, 2/3 of the length
    draft = drafter.propose([1, 2, 3, 9, 1, 2, 4, 7, 1, 2], 1)
    assert draft.tokens == [4]
    assert draft.confidences[0] == pytest.approx(0.5 * 2 / 3)


def test_prompt_lookup_never_matches_or_copies_the_chat_template():
    head, text, tail = [100, 101], [1, 2, 3, 4], [102, 100, 101]  # a turn marker, the user's text, the answer's opening
    prompt, template = head + text + tail, (range(0, 2), range(6, 9))
    plain, masked = PromptLookupDrafter(ngram_size=2), PromptLookupDrafter(ngram_size=2, template=template)
    assert plain.propose(prompt + [4], 3).tokens == [102, 100, 101]  # unmasked, it copies the template
    assert masked.propose(prompt + [4], 3).tokens == []  # what follows "4" in the prompt is the template
    assert plain.propose(prompt + [2], 3).tokens == [3, 4, 102]
    assert masked.propose(prompt + [2], 3).tokens == [3, 4]  # the copy ends where the user's text ends
    assert plain.propose(prompt, 3).tokens == [1, 2, 3]  # matched on the turn marker itself
    assert masked.propose(prompt, 3).tokens == []  # no answer yet: nothing to match



def test_greedy_exact_rule_accepts_only_the_argmax():
    q, rule = torch.tensor([0.1, 0.6, 0.3]), ExactRule(Sampler())
    assert rule.judge(q, 1, None, 1) == Verdict(True, 1, Why.ARGMAX)
    assert rule.judge(q, 2, None, 1) == Verdict(False, 1, Why.ARGMAX_DIFFERS)


@pytest.mark.parametrize("with_p", [True, False])
def test_rejection_sampling_emits_the_target_distribution(with_p):
    torch.manual_seed(0)
    q = torch.tensor([0.5, 0.3, 0.15, 0.05])
    p = torch.tensor([0.1, 0.2, 0.3, 0.4]) if with_p else None
    sampler = Sampler(temperature=1.0, seed=3)
    counts = torch.zeros(4)
    n = 20_000
    for _ in range(n):
        token = int(torch.multinomial(p, 1, generator=sampler.generator)) if with_p else 2
        counts[rejection_sample(sampler, q, token, p)[1]] += 1
    assert torch.allclose(counts / n, q, atol=0.015)


def _trace() -> Trace:
    tokens = [TokenRecord(i, 10 + i, "x", r, tier, outcome, "", "") for i, (r, tier, outcome) in enumerate([
        (0, 1, "direct-accepted"), (0, 2, "slim-regenerated"),
        (1, 1, "direct-accepted"), (1, 3, "full-accepted"), (1, 3, "full-bonus")])]
    rounds = [
        RoundRecord(0, [1, 2, 3], accepted=1, emitted=2, calls=[
            CallRecord("drafter", 5, 3, 0.5, 0.1, False), CallRecord("slim", 3, 4, 0.7, 0.1, False)]),
        RoundRecord(1, [4, 5], accepted=2, emitted=3, calls=[CallRecord("full", 3, 6, 1.0, 0.2, False)]),
    ]
    return Trace("p", 5, {}, {}, tokens, rounds, wall_s=2.0)


def test_metric_definitions_on_a_hand_made_trace():
    m = summarize(_trace())
    assert m["drafted"] == 5 and m["accepted"] == 3
    assert m["rejection_rate"] == pytest.approx(2 / 5)
    assert m["mean_accepted_length"] == pytest.approx(3 / 2)
    assert m["tokens_per_round"] == pytest.approx(5 / 2)
    assert m["modelled_cost"] == pytest.approx(2.2)
    assert m["modelled_speedup"] == pytest.approx(5 / 2.2)
    assert m["full_calls_per_token"] == pytest.approx(1 / 5)
    assert m["tokens_per_s"] == pytest.approx(2.5)
    assert m["share_direct-accepted"] == pytest.approx(0.4)
    assert m["mean_acceptance_length"] == pytest.approx(1 + 3 / 2)  # vLLM: 1 + accepted / drafts


def test_vllm_mean_acceptance_length_counts_only_rounds_that_drafted():
    trace = _trace()
    trace.rounds.append(RoundRecord(2, [], accepted=0, emitted=1, calls=[CallRecord("full", 1, 6, 1.0, 0.1, False)]))
    trace.tokens.append(TokenRecord(5, 20, "x", 2, 3, "plain", "no-draft", ""))
    m = summarize(trace)
    assert m["mean_acceptance_length"] == pytest.approx(1 + 3 / 2), "a round with no draft is not a draft"
    assert m["mean_accepted_length"] == pytest.approx(3 / 3), "ours divides by every round"
    plain = Trace("p", 5, {}, {}, trace.tokens[-1:], trace.rounds[-1:], wall_s=1.0)
    assert summarize(plain)["mean_acceptance_length"] == 1.0


def test_vllm_acceptance_length_exceeds_tokens_per_round_when_tier_one_ends_a_round():
    """A round trusted entirely to tier 1 has no verifier token: vLLM's '1 +' overcounts it."""
    tokens = [TokenRecord(i, i, "x", 0, 1, "direct-accepted", "draft-confident", "") for i in range(3)]
    rounds = [RoundRecord(0, [0, 1, 2], accepted=3, emitted=3, calls=[])]
    m = summarize(Trace("p", 5, {}, {}, tokens, rounds, wall_s=1.0))
    assert m["tokens_per_round"] == pytest.approx(3) and m["mean_acceptance_length"] == pytest.approx(4)


def test_a_run_with_zero_modelled_cost_has_an_unbounded_speedup_not_zero():
    tokens = [TokenRecord(i, i, "x", 0, 1, "direct-accepted", "draft-confident", "") for i in range(3)]
    rounds = [RoundRecord(0, [0, 1, 2], accepted=3, emitted=3, calls=[])]
    m = summarize(Trace("p", 5, {}, {}, tokens, rounds, wall_s=1.0))
    assert m["modelled_cost"] == 0 and m["modelled_speedup"] == float("inf")
    assert summarize(Trace("p", 5, {}, {}, [], [], wall_s=0.0))["modelled_speedup"] == 0.0, "nothing generated"


def test_trace_round_trips_through_json_and_dataframe():
    trace = _trace()
    again = Trace.from_json(trace.to_json())
    assert again == trace
    frame = trace.to_dataframe()
    assert list(frame["outcome"]) == [t.outcome for t in trace.tokens]
    assert len(trace.rounds_dataframe()) == 2


def test_routes_resolve_presets_explicit_lists_and_keep_cache_critical_layers():
    from transformers import Gemma3TextConfig, LlamaConfig

    from core.errors import RoutingError
    from core.models.layer_routes import resolve_route

    smol = LlamaConfig(num_hidden_layers=30, hidden_size=576)
    assert resolve_route("auto-slim", smol).skipped == (14, 17, 18)
    other = LlamaConfig(num_hidden_layers=8, hidden_size=64)
    assert resolve_route("auto-slim", other).name == "skip-middle-25"
    assert resolve_route("skip-middle-50", other).skipped == (2, 3, 4, 5)
    assert resolve_route("early-exit-50", other).layers == (0, 1, 2, 3)
    assert resolve_route("layers:0-2,5", other).layers == (0, 1, 2, 5)
    assert resolve_route("layers:3-5", other).layers == (0, 3, 4, 5), "layer 0 sizes the cache: always kept"
    gemma = Gemma3TextConfig(num_hidden_layers=12, sliding_window_pattern=6)
    first_full = gemma.layer_types.index("full_attention")
    assert first_full in resolve_route("skip-middle-50", gemma).layers
    with pytest.raises(RoutingError):
        resolve_route("layers:a-b", other)


def test_stopwatch_synchronises_only_the_cuda_device_it_times(monkeypatch):
    from core.decoding.timing import Stopwatch

    synced = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    with Stopwatch("cpu") as watch:
        pass
    assert synced == [] and watch.seconds >= 0
    with Stopwatch("cuda:1"):
        pass
    assert synced == [torch.device("cuda:1")] * 2


def test_a_trace_config_is_typed_and_old_json_with_a_dict_config_still_loads():
    old = {"prompt": "p", "prompt_token_count": 3, "config": {"mode": "sd", "slim_route": [0, 1, 5], "gone": 1},
           "models": {}, "tokens": [{"position": 0, "token_id": 7, "text": "a", "round": 0, "tier": 3,
                                     "outcome": "plain", "reason": "no-draft", "verdict": "argmax"}],
           "rounds": [{"index": 0, "draft_tokens": [], "accepted": 0, "emitted": 1,
                       "calls": [{"role": "full", "tokens_processed": 4, "layers": 6, "cost_units": 1.2,
                                  "wall_s": 0.0, "from_memo": True}]}],
           "fidelity": None}  # a download from before audit states, prefill flags and the typed config
    import json

    trace = Trace.from_json(json.dumps(old))
    assert isinstance(trace.config, DecodeConfig) and trace.config.mode == "sd"
    assert trace.config.slim_route == (0, 1, 5) and trace.config.gamma == DecodeConfig.gamma  # defaults fill in
    assert trace.tokens[0].audit == "none" and trace.rounds[0].calls[0].prefill is False
    again = Trace.from_json(trace.to_json())
    assert again.config == trace.config and again.tokens == trace.tokens
    assert trace.plain_cost_after(5) == 5.0  # no prefill recorded: one unit a token
