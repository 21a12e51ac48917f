"""The engine on tiny random-weight models: exactness invariants, caches, sampling, routing reasons, bad input.

Every exactness test also asserts that the path it claims to cover was taken (a draft token
accepted, a bonus token, a rejection), so a run that never exercises the interesting branch cannot
pass by accident. References are computed without any KV cache or memo.
"""

from collections import Counter

import pytest
import torch
from tiny import TEST_DEVICE, VOCAB, char_tokenizer, loaded, quiet_scale, tiny_bundle, tiny_model

from core import (
    ConfigError,
    DecodeConfig,
    ModelLoadError,
    PromptError,
    RoutingError,
    TokenizerMismatchError,
    attach_fidelity,
    generate,
    load_model,
    summarize,
)
from core.analysis.fidelity import reference_continuation
from core.decoding.engine import encode_prompt, stop_token_ids
from core.decoding.scorer import Scorer
from core.limits import MAX_PROMPT_CHARS
from core.models.layer_routes import resolve_route
from core.models.loading import LoadedModel, ModelBundle
from core.models.routed_layers import routed
from core.models.verifier_quant import quantise_verifier
from core.vocabulary import OUTCOME_TIER, REASON_TIER, Outcome, Reason

PROMPT = "the cat sat on the mat. the cat sat on the"
LONG_PROMPT = "a cat sat on a mat and a dog sat on a log. the cat saw the dog and the dog saw the cat. then they sat."
BASE = DecodeConfig(max_new_tokens=48, gamma=4, chat_template=False, draft_route="skip-middle-50",
                    slim_route="skip-middle-25")
KEPT = {Outcome.DIRECT_ACCEPT.value, Outcome.SLIM_ACCEPT.value, Outcome.FULL_ACCEPT.value}


@pytest.fixture(scope="module")
def bundle():
    """Middle layers quieted so routed models agree with the full one often but not always."""
    return tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)


@pytest.fixture(scope="module", params=["none", "int8"])
def each(request):
    """The bundle with its verifier in each precision (core/models/verifier_quant.py): the greedy invariants must
    hold within every one, int8's included (its layers and attention are batch-invariant)."""
    made = tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)
    quantise_verifier(made.verifier.model, request.param)
    return made


def fresh(bundle: ModelBundle) -> ModelBundle:
    """The same models with an empty memo: a run on it computes every prediction for real."""
    return ModelBundle(verifier=bundle.verifier, drafter=bundle.drafter)


def prompt_ids(bundle: ModelBundle, prompt: str = PROMPT) -> list[int]:
    return encode_prompt(bundle.verifier.tokenizer, prompt, chat_template=False)


@torch.inference_mode()
def next_logits(model, sequences: list[list[int]], route=None) -> torch.Tensor:
    """No-cache logits after each sequence (all the same length), in one batch."""
    with routed(route):
        return model(input_ids=torch.tensor(sequences, device=TEST_DEVICE), use_cache=False).logits[:, -1].float()


def greedy_without_cache(model, ids: list[int], n: int, route=None) -> list[int]:
    """Reference decoding: recompute the whole sequence every step, no KV cache, no memo; no stop."""
    ids, out = list(ids), []
    for _ in range(n):
        token = int(next_logits(model, [ids], route)[0].argmax())
        out.append(token)
        ids.append(token)
    return out


def outcomes(trace) -> Counter:
    return Counter(t.outcome for t in trace.tokens)


def assert_paths_taken(trace, *, accepted=True, bonus=True, rejected=True) -> None:
    """The run really exercised what an exactness test claims to cover."""
    m, seen = summarize(trace), outcomes(trace)
    if accepted:
        assert m["accepted"] > 0, f"no draft token was accepted: {dict(seen)}"
    if bonus:
        assert seen[Outcome.FULL_BONUS.value] > 0, f"no bonus token: {dict(seen)}"
    if rejected:
        assert m["rejection_rate"] > 0, f"no draft token was rejected: {dict(seen)}"


def test_plain_greedy_matches_recomputation_and_hf_generate(each):
    trace = generate(each, PROMPT, BASE.with_(mode="plain"), replay=False)
    ids = prompt_ids(each)
    assert trace.token_ids == greedy_without_cache(each.verifier.model, ids, 48)
    hf = each.verifier.model.generate(torch.tensor([ids], device=TEST_DEVICE), do_sample=False, max_new_tokens=48)
    assert trace.token_ids == hf[0, len(ids):].tolist()
    assert {t.outcome for t in trace.tokens} == {"plain"} and {t.reason for t in trace.tokens} == {"no-draft"}


@pytest.mark.parametrize("drafter, gamma", [("self", 4), ("ngram", 1)])
def test_every_token_to_the_full_verifier_reproduces_plain_greedy(each, drafter, gamma):
    config = BASE.with_(drafter=drafter, gamma=gamma)
    plain = greedy_without_cache(each.verifier.model, prompt_ids(each), 48)
    forced = generate(fresh(each), PROMPT, config.with_(mode="via", tau_accept=1.0, tau_slim=1.0), replay=False)
    classic = generate(fresh(each), PROMPT, config.with_(mode="sd", tau_accept=0.2, tau_slim=0.1), replay=False)
    assert forced.token_ids == plain
    assert classic.token_ids == plain
    for trace in (forced, classic):
        assert_paths_taken(trace)
        assert {t.tier for t in trace.tokens} == {3}
        assert summarize(trace)["slim_calls"] == 0


def test_every_token_to_tier_one_reproduces_the_drafters_own_greedy_output(each):
    config = BASE.with_(tau_accept=0.0, tau_slim=0.0)
    trace = generate(fresh(each), PROMPT, config, replay=False)
    route = resolve_route(config.draft_route, each.verifier.model.config)
    own = greedy_without_cache(each.verifier.model, prompt_ids(each), 48, route)
    stops = stop_token_ids(each.verifier.model, each.verifier.tokenizer)
    assert not set(own) & stops, "the drafter's own output must not stop early here"
    assert trace.token_ids == own
    assert {t.outcome for t in trace.tokens} == {"direct-accepted"}
    assert {t.reason for t in trace.tokens} == {"draft-confident"}
    m = summarize(trace)
    assert m["full_calls"] == 0 and m["slim_calls"] == 0 and m["drafter_calls"] > 0


def test_all_to_the_slim_verifier_reproduces_the_slim_models_greedy_output(each):
    config = BASE.with_(tau_accept=1.0, tau_slim=0.0)
    trace = generate(fresh(each), PROMPT, config, replay=False)
    route = resolve_route(config.slim_route, each.verifier.model.config)
    assert trace.token_ids == greedy_without_cache(each.verifier.model, prompt_ids(each), 48, route)
    seen = outcomes(trace)
    assert seen["slim-accepted"] > 0 and seen["slim-regenerated"] > 0, dict(seen)
    assert {t.tier for t in trace.tokens} == {2} and {t.reason for t in trace.tokens} == {"slim-confident"}


def mixed_config():
    return BASE.with_(tau_accept=0.5, tau_slim=0.4, max_new_tokens=48)


def test_every_token_has_one_tier_and_a_reason_consistent_with_it_and_rounds_add_up(bundle):
    config = mixed_config()
    trace = generate(bundle, PROMPT, config, replay=False)
    n = len(trace.tokens)
    assert n == 48
    assert {t.tier for t in trace.tokens} == {1, 2, 3}, "these thresholds mix all three tiers on this model"
    for t in trace.tokens:
        assert t.tier == OUTCOME_TIER[Outcome(t.outcome)]
        assert t.tier == REASON_TIER[Reason(t.reason)], (t.reason, t.tier)
        assert t.verdict, "every token records what the deciding rule said"
        if t.reason == "draft-confident":
            assert t.draft_confidence >= config.tau_accept
        if t.reason == "slim-confident":
            assert t.draft_confidence < config.tau_accept and t.slim_confidence >= config.tau_slim
        if t.reason == "not-confident":
            assert t.draft_confidence < config.tau_accept and t.slim_confidence < config.tau_slim
    assert [t.position for t in trace.tokens] == list(range(n))
    assert sum(r.emitted for r in trace.rounds) == n
    for r in trace.rounds:
        mine = [t for t in trace.tokens if t.round == r.index]
        assert len(mine) == r.emitted
        assert r.accepted <= r.drafted
        assert len([t for t in mine if t.outcome in KEPT]) == r.accepted


def test_a_token_decided_by_an_already_run_full_pass_is_a_free_verdict(bundle):
    """After the full verifier ran in a round, it decides every later token of that round for free,
    even one the drafter was confident about (tier 1 would otherwise have taken it)."""
    config = BASE.with_(tau_accept=0.6, tau_slim=0.6, max_new_tokens=48)
    trace = generate(bundle, PROMPT, config, replay=False)
    free = [t for t in trace.tokens if t.reason == "free-verdict"]
    assert free, Counter(t.reason for t in trace.tokens)
    assert any(t.draft_confidence >= config.tau_accept for t in free), "a confident draft token went to the full pass"
    for t in free:
        assert t.tier == 3
        earlier = [e for e in trace.tokens if e.round == t.round and e.position < t.position]
        assert any(e.reason in ("not-confident", "stop-token") for e in earlier), "the full pass ran earlier"
        assert t.full_confidence is not None


def test_kv_caches_of_all_three_depths_match_recomputation_after_rejections(bundle, monkeypatch):
    """Every prediction a real (cached) run computed equals a no-cache forward of that prefix."""
    seen: list[tuple] = []
    original = Scorer.predict

    def spy(self, tokens, first, last):
        logits, call = original(self, tokens, first, last)
        seen.append((self.route, list(tokens), first, last, logits))
        return logits, call

    monkeypatch.setattr(Scorer, "predict", spy)
    trace = generate(fresh(bundle), PROMPT, mixed_config(), replay=False)
    m = summarize(trace)
    assert m["rejection_rate"] > 0 and m["drafter_calls"] and m["slim_calls"] and m["full_calls"]
    checked = Counter()
    for route, tokens, first, last, logits in seen:
        rows = torch.stack([row.float() for row in logits]).to(TEST_DEVICE)
        for k, row in zip(range(first, last + 1), rows, strict=True):
            expected = next_logits(bundle.verifier.model, [tokens[:k]], route)[0]
            assert torch.allclose(row, expected, atol=1e-4), (route.name, k)
        checked[route.name] += 1
    assert set(checked) == {"full", "skip-middle-25", "skip-middle-50"}


def test_replay_under_new_thresholds_equals_a_fresh_real_run(bundle):
    """Run A at thresholds X fills the memo; run B at thresholds Y replays from it. B must equal a
    real run at Y on an empty memo, tokens, outcomes, reasons and modelled cost."""
    x, y = mixed_config(), mixed_config().with_(tau_accept=0.7, tau_slim=0.3)
    shared = fresh(bundle)
    generate(shared, PROMPT, x, replay=True)
    replayed = generate(shared, PROMPT, y, replay=True)
    real = generate(fresh(bundle), PROMPT, y, replay=False)
    assert replayed.token_ids == real.token_ids
    assert [(t.outcome, t.reason) for t in replayed.tokens] == [(t.outcome, t.reason) for t in real.tokens]
    assert summarize(replayed)["modelled_cost"] == pytest.approx(summarize(real)["modelled_cost"])
    calls = [c for r in replayed.rounds for c in r.calls]
    assert any(c.from_memo for c in calls), "B should reuse predictions A computed"
    assert not summarize(replayed)["timing_complete"]
    assert all(not c.from_memo for r in real.rounds for c in r.calls)


def bf16_bundle() -> ModelBundle:
    """The test bundle's verifier in bfloat16 (a model of its own: `.to` converts in place)."""
    v = tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True).verifier
    return ModelBundle(verifier=LoadedModel(v.name, v.model.to(torch.bfloat16), v.tokenizer, v.device, torch.bfloat16))


def test_a_bf16_model_memoises_its_own_dtype_and_replays_exactly():
    """bf16 logits are kept as bf16 (half the bytes: the pair's 151,936-token rows), and a run served wholly from
    them decides exactly as the run that computed them: same tokens, same confidences to the last bit. (Against
    a fresh run at other thresholds bf16 differs slightly anyway: a k-token pass rounds differently.)"""
    half = bf16_bundle()
    computed = generate(half, PROMPT, mixed_config(), replay=True)
    assert {entry.dtype for entry in half.memo._entries.values()} == {torch.bfloat16}
    replayed = generate(half, PROMPT, mixed_config(), replay=True)
    assert all(c.from_memo for r in replayed.rounds for c in r.calls)
    assert replayed.token_ids == computed.token_ids

    def decisions(trace):
        return [(t.outcome, t.reason, t.draft_confidence, t.slim_confidence, t.full_confidence) for t in trace.tokens]

    assert decisions(replayed) == decisions(computed)


def test_in_bf16_the_fidelity_reference_is_plain_decoding_not_the_runs_own_batched_verdicts():
    """The reference a bf16 run is judged against is what plain decoding computes (one token per pass), memoised
    apart from the batched passes the run wrote, so numerics show as differences instead of hiding."""
    half = bf16_bundle()
    sd = generate(half, PROMPT, BASE.with_(mode="sd", drafter="self", max_new_tokens=24), replay=True)
    reference = reference_continuation(half, sd)
    plain = generate(fresh(half), PROMPT, BASE.with_(mode="plain", max_new_tokens=24), replay=False)
    assert reference == plain.token_ids
    assert any("(one token at a time)" in key for key, _ in half.memo._entries)
    full = tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)
    assert reference_continuation(full, generate(full, PROMPT, BASE.with_(mode="plain", max_new_tokens=8)))
    assert not any("(one token at a time)" in key for key, _ in full.memo._entries)  # fp32 shares the memo


def test_fidelity_matches_an_independent_no_memo_computation(bundle):
    trace = generate(bundle, PROMPT, mixed_config(), replay=True)
    fidelity = attach_fidelity(bundle, trace)
    model, ids, out = bundle.verifier.model, prompt_ids(bundle), trace.token_ids
    reference = greedy_without_cache(model, ids, len(out))
    common = next((i for i, (a, b) in enumerate(zip(out, reference, strict=True)) if a != b), len(out))
    assert not fidelity.identical and fidelity.common_prefix == common < len(out)
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids + out], device=TEST_DEVICE)).logits[0, len(ids) - 1:-1].float()
    targets = torch.tensor(out, device=TEST_DEVICE)
    assert fidelity.full_agreement == pytest.approx(float((logits.argmax(-1) == targets).float().mean()))
    assert fidelity.full_nll == pytest.approx(float(torch.nn.functional.cross_entropy(logits, targets)), rel=1e-4)
    assert 0 < fidelity.full_agreement < 1


def test_a_run_where_no_verifier_ran_reports_an_unbounded_speedup(bundle):
    config = BASE.with_(drafter="ngram", tau_accept=0.0, tau_slim=0.0, max_new_tokens=16, copy_evidence="statistic")
    trace = generate(bundle, PROMPT, config)
    m = summarize(trace)
    assert {t.outcome for t in trace.tokens} == {"direct-accepted"}
    assert m["modelled_cost"] == 0 and m["modelled_speedup"] == float("inf")


@pytest.mark.parametrize("tau, reason", [(0.0, "slim-confident"), (0.99, "stop-token")])
def test_a_stop_token_is_never_trusted_directly(tau, reason):
    """Prompt lookup copies '.' (a stop token here) with full confidence; tier 1 must not take it.
    At tau 0 the slim verifier decides it; at 0.99 the slim one is not that sure, so the full one does."""
    bundle = tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)
    period = bundle.verifier.tokenizer.convert_tokens_to_ids(".")
    bundle.verifier.model.generation_config.eos_token_id = [0, period]
    config = BASE.with_(drafter="ngram", tau_accept=tau, tau_slim=tau, slim_signal="margin", gamma=8,
                        copy_evidence="statistic")  # copies pass tier 1 on their statistic alone
    trace = generate(bundle, "the cat sat on the mat. the cat", config)
    round_ = next(r for r in trace.rounds if period in r.draft_tokens)  # the copied '.' was drafted
    at = round_.draft_tokens.index(period)
    token = [t for t in trace.tokens if t.round == round_.index][at]
    assert token.draft_confidence >= tau, "tier 1 would have taken it, were it not a stop token"
    assert token.tier != 1 and token.reason == reason, token
    assert all(t.tier != 1 for t in trace.tokens if t.token_id == period)


def test_sampling_is_reproducible_with_a_fixed_seed(bundle):
    config = mixed_config().with_(temperature=0.9, top_p=0.95, seed=7)
    a = generate(bundle, PROMPT, config, replay=False)
    b = generate(bundle, PROMPT, config, replay=False)
    c = generate(bundle, PROMPT, config.with_(seed=8), replay=False)
    assert a.token_ids == b.token_ids
    assert [t.outcome for t in a.tokens] == [t.outcome for t in b.tokens]
    assert a.token_ids != c.token_ids


def assert_follows_the_full_model(model, prompt: list[int], outputs: list[list[int]], position: int,
                                  temperature: float) -> int:
    """Each output's token at `position` is a draw from the full model's distribution given that
    output's own prefix. Sums over runs: observed counts per token vs expected (sum of the
    conditional probabilities), within 4.5 standard deviations. Returns how many runs were checked."""
    rows = [out for out in outputs if len(out) > position]
    prefixes = sorted({tuple(out[:position]) for out in rows})
    probs = torch.softmax(next_logits(model, [prompt + list(p) for p in prefixes]) / temperature, -1).cpu()
    index = {p: i for i, p in enumerate(prefixes)}
    conditional = probs[[index[tuple(out[:position])] for out in rows]]
    expected = conditional.sum(0)
    variance = (conditional * (1 - conditional)).sum(0)
    observed = torch.bincount(torch.tensor([out[position] for out in rows]), minlength=probs.shape[-1]).float()
    gap = (observed - expected).abs() - 4.5 * variance.sqrt() - 1.0
    assert torch.all(gap <= 0), f"position {position}: token {int(gap.argmax())} off by {float(gap.max()):.1f}"
    return len(rows)


def sample_many(bundle, config, runs):
    traces = [generate(bundle, PROMPT, config.with_(seed=seed)) for seed in range(runs)]
    return traces, [t.token_ids for t in traces]


def test_full_verifier_rejection_sampling_is_exact_in_distribution(bundle):
    """Classic SD, gamma 2, three tokens per run: position 0, the later position 1 and the bonus
    token (position 2 after both drafts were kept) each follow the full model's distribution."""
    temperature = 1.0
    config = BASE.with_(mode="sd", gamma=2, max_new_tokens=3, temperature=temperature)
    traces, outputs = sample_many(bundle, config, 2000)  # the memo makes repeated prefixes cost no pass
    model, ids = bundle.verifier.model, prompt_ids(bundle)
    for position in (0, 1, 2):
        assert_follows_the_full_model(model, ids, outputs, position, temperature)
    bonus = [t.token_ids for t in traces if len(t.tokens) == 3 and t.tokens[2].outcome == "full-bonus"]
    rejected = sum(1 for t in traces if t.tokens[0].outcome == "full-corrected")
    assert len(bonus) > 500 and rejected > 50, (len(bonus), rejected)
    assert assert_follows_the_full_model(model, ids, bonus, 2, temperature) == len(bonus)


def test_separate_drafter_model_with_the_same_tokenizer():
    bundle = tiny_bundle("llama", layers=6, drafter_layers=2, avoid_eos=True)
    config = BASE.with_(drafter="model", gamma=1)
    plain = greedy_without_cache(bundle.verifier.model, prompt_ids(bundle), 48)
    sd = generate(bundle, PROMPT, config.with_(mode="sd"), replay=False)
    assert sd.token_ids == plain
    assert_paths_taken(sd)
    trace = generate(bundle, PROMPT, config.with_(tau_accept=0.3, tau_slim=0.2))
    assert summarize(trace)["drafter_calls"] > 0
    assert "tiny-drafter" in trace.models["drafter"]


def test_a_drafter_with_a_padded_vocabulary_samples_exactly_at_tier_three():
    """Same tokenizer, but the drafter's embedding matrix has 5 padding rows (48 vs 43 logits)."""
    bundle = tiny_bundle("llama", layers=6, drafter_layers=2, drafter_vocab=VOCAB + 5, avoid_eos=True)
    assert bundle.drafter.model.config.vocab_size != bundle.verifier.model.config.vocab_size
    temperature = 1.0
    config = BASE.with_(mode="sd", drafter="model", gamma=2, max_new_tokens=2, temperature=temperature)
    traces, outputs = sample_many(bundle, config, 1500)
    assert all(max(out) < VOCAB for out in outputs)
    assert any(t.tokens[0].outcome == "full-accepted" for t in traces)
    for position in (0, 1):
        assert_follows_the_full_model(bundle.verifier.model, prompt_ids(bundle), outputs, position, temperature)


def test_mismatched_tokenizers_are_refused():
    verifier = loaded("v", tiny_model())
    drafter = loaded("d", tiny_model(layers=2, vocab=45), char_tokenizer(extra="XY"))
    with pytest.raises(TokenizerMismatchError, match="tokenizers differ"):
        ModelBundle(verifier=verifier, drafter=drafter)


@pytest.mark.parametrize("family", ["qwen2", "mistral", "gemma3_text"])
def test_routing_and_exactness_hold_for_other_families(family):
    bundle = tiny_bundle(family, layers=6, middle_scale=quiet_scale(family), avoid_eos=True)
    config = BASE.with_(max_new_tokens=32, gamma=3)
    model, ids = bundle.verifier.model, prompt_ids(bundle)
    plain = generate(bundle, PROMPT, config.with_(mode="plain"), replay=False)
    assert plain.token_ids == greedy_without_cache(model, ids, 32)
    sd = generate(fresh(bundle), PROMPT, config.with_(mode="sd"), replay=False)
    assert sd.token_ids == plain.token_ids
    assert_paths_taken(sd)
    for tier, thresholds, route in ((1, (0.0, 0.0), config.draft_route), (2, (1.0, 0.0), config.slim_route)):
        forced = generate(fresh(bundle), PROMPT, config.with_(tau_accept=thresholds[0], tau_slim=thresholds[1]),
                          replay=False)
        assert forced.token_ids == greedy_without_cache(model, ids, 32, resolve_route(route, model.config))
        assert {t.tier for t in forced.tokens} == {tier}


@pytest.mark.parametrize("family", ["gemma3_text", "mistral"])
def test_sliding_window_families_stay_exact_past_the_window_with_rejections(family):
    """Window 8, a ~100-token prompt, 64 new tokens: every rollback crosses the window."""
    bundle = tiny_bundle(family, layers=6, middle_scale=quiet_scale(family), avoid_eos=True, sliding_window=8)
    assert bundle.verifier.model.config.sliding_window == 8
    ids = prompt_ids(bundle, LONG_PROMPT)
    assert len(ids) >= 100
    config = BASE.with_(max_new_tokens=64, gamma=4)
    reference = greedy_without_cache(bundle.verifier.model, ids, 64)
    plain = generate(fresh(bundle), LONG_PROMPT, config.with_(mode="plain"), replay=False)
    assert plain.token_ids == reference
    for mode in ("sd", "via"):
        trace = generate(fresh(bundle), LONG_PROMPT, config.with_(mode=mode, tau_accept=1.0, tau_slim=1.0),
                         replay=False)
        assert trace.token_ids == reference, mode
        assert_paths_taken(trace)


def test_bad_inputs_raise_clear_typed_errors(bundle):
    with pytest.raises(PromptError, match="empty"):
        generate(bundle, "   ", BASE)
    with pytest.raises(PromptError, match="characters"):
        generate(bundle, "a" * (MAX_PROMPT_CHARS + 1), BASE)
    with pytest.raises(ConfigError, match="out of order"):
        generate(bundle, PROMPT, BASE.with_(tau_accept=0.2, tau_slim=0.5))
    with pytest.raises(RoutingError, match="layers"):
        generate(bundle, PROMPT, BASE.with_(slim_route="layers:0-99"))
    with pytest.raises(RoutingError, match="unknown route"):
        generate(bundle, PROMPT, BASE.with_(slim_route="skip-everything"))
    with pytest.raises(ConfigError, match="separate drafter"):
        generate(bundle, PROMPT, BASE.with_(drafter="model"))
    with pytest.raises(ConfigError, match="seed"):
        generate(bundle, PROMPT, BASE.with_(temperature=0.8, seed=2**64))


def test_unknown_model_id_offline_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError) as info:
        load_model("no-such-org/no-such-model-xyz")
    message = str(info.value)
    assert "no-such-org/no-such-model-xyz" in message and "\n" not in message
    assert info.value.__cause__ is None


def test_local_folder_loads_and_family_is_checked(tmp_path):
    model, tok = tiny_model(), char_tokenizer()
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded_model = load_model(str(tmp_path), device=str(TEST_DEVICE), dtype="float32")
    assert loaded_model.num_layers == 6
    trace = generate(ModelBundle(verifier=loaded_model), PROMPT, BASE.with_(mode="plain", max_new_tokens=5))
    assert len(trace.tokens) == 5


def test_streaming_yields_each_round_and_a_stop_request_ends_the_run(bundle):
    from core import iter_generate

    config = mixed_config()
    seen = [len(trace.tokens) for trace in iter_generate(bundle, PROMPT, config, replay=False)]
    assert seen == sorted(seen) and len(set(seen)) > 3, "the trace grows round by round"
    rounds_done = []
    stopped = generate(bundle, PROMPT, config, replay=False,
                       should_stop=lambda: rounds_done.append(1) or len(rounds_done) > 3)
    assert stopped.stop_reason == "cancelled" and len(stopped.rounds) == 3
    assert 0 < len(stopped.tokens) < 48


def test_route_search_builds_its_tensors_on_the_models_device(bundle):
    from core.tools.route_search import agreement, teacher_batches

    batches = teacher_batches(bundle, [PROMPT], tokens=8, chat_template=False)
    ids, targets = batches[0]
    assert ids.device.type == targets.device.type == bundle.verifier.device.type
    assert ids.shape[1] == len(prompt_ids(bundle)) + 8
    n = bundle.verifier.num_layers
    assert agreement(bundle.verifier.model, batches, set(range(n)), n) == 1.0
    assert agreement(bundle.verifier.model, batches, {0, n - 1}, n) < 1.0
