"""The engine on tiny random-weight models: exactness invariants, caches, sampling, bad input."""

import pytest
import torch
from tiny import char_tokenizer, tiny_bundle, tiny_model

from core import (
    ConfigError,
    DecodeConfig,
    ModelLoadError,
    PromptError,
    RoutingError,
    TokenizerMismatchError,
    generate,
    load_model,
    summarize,
)
from core.engine import encode_prompt
from core.limits import MAX_PROMPT_CHARS
from core.memo import memo_key
from core.models import LoadedModel, ModelBundle
from core.routing import resolve_route, routed
from core.tiers import OUTCOME_TIER, Outcome

PROMPT = "the cat sat on the mat. the cat sat on the"
BASE = DecodeConfig(max_new_tokens=24, gamma=4, chat_template=False, draft_route="skip-middle-50",
                    slim_route="skip-middle-25")


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle("llama", layers=6)


@torch.inference_mode()
def greedy_without_cache(model, prompt_ids, n, route=None, stop=0):
    """Reference decoding: recompute the whole sequence every step, no KV cache at all."""
    ids = list(prompt_ids)
    out = []
    for _ in range(n):
        with routed(route):
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
        token = int(logits.argmax())
        out.append(token)
        ids.append(token)
        if token == stop:
            break
    return out


def test_plain_greedy_matches_recomputation_and_hf_generate(bundle):
    trace = generate(bundle, PROMPT, BASE.with_(mode="plain"))
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT, chat_template=False)
    assert trace.token_ids == greedy_without_cache(bundle.verifier.model, ids, 24)
    hf = bundle.verifier.model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=24)
    assert trace.token_ids == hf[0, len(ids):].tolist()
    assert {t.outcome for t in trace.tokens} == {"plain"}


@pytest.mark.parametrize("drafter", ["self", "ngram"])
def test_every_token_to_the_full_verifier_reproduces_plain_greedy(bundle, drafter):
    plain = generate(bundle, PROMPT, BASE.with_(mode="plain"))
    forced = generate(bundle, PROMPT, BASE.with_(mode="via", drafter=drafter, tau_accept=1.0, tau_slim=1.0),
                      replay=False)
    classic = generate(bundle, PROMPT, BASE.with_(mode="sd", drafter=drafter, tau_accept=0.2, tau_slim=0.1),
                       replay=False)
    assert forced.token_ids == plain.token_ids
    assert classic.token_ids == plain.token_ids
    assert {t.tier for t in forced.tokens} == {3}
    assert summarize(forced)["slim_calls"] == 0


def test_every_token_to_tier_one_reproduces_the_drafters_own_greedy_output(bundle):
    config = BASE.with_(tau_accept=0.0, tau_slim=0.0)
    trace = generate(bundle, PROMPT, config, replay=False)
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT, chat_template=False)
    route = resolve_route(config.draft_route, bundle.verifier.model.config)
    own = greedy_without_cache(bundle.verifier.model, ids, 24, route)
    stop = own.index(0) if 0 in own else len(own)  # a stop token is never trusted directly
    assert trace.token_ids[:stop] == own[:stop]
    assert {t.outcome for t in trace.tokens[:stop]} == {"direct-accepted"}
    assert {t.reason for t in trace.tokens[:stop]} == {"draft-confident"}
    if stop < len(own):
        assert trace.tokens[stop].tier != 1
    else:
        m = summarize(trace)
        assert m["full_calls"] == 0 and m["slim_calls"] == 0


def test_all_to_the_slim_verifier_reproduces_the_slim_models_greedy_output(bundle):
    config = BASE.with_(tau_accept=1.0, tau_slim=0.0)
    trace = generate(bundle, PROMPT, config, replay=False)
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT, chat_template=False)
    route = resolve_route(config.slim_route, bundle.verifier.model.config)
    assert trace.token_ids == greedy_without_cache(bundle.verifier.model, ids, 24, route)
    assert {t.tier for t in trace.tokens} == {2}


def mixed_config():
    return BASE.with_(tau_accept=0.35, tau_slim=0.25, max_new_tokens=40)


def test_every_token_has_exactly_one_consistent_tier_and_rounds_add_up(bundle):
    trace = generate(bundle, PROMPT, mixed_config(), replay=False)
    n = len(trace.tokens)
    assert n == 40 or (trace.stop_reason == "eos" and trace.tokens[-1].token_id == 0)
    tiers = {t.tier for t in trace.tokens}
    assert len(tiers) >= 2, "thresholds should mix tiers on this model"
    for t in trace.tokens:
        assert t.tier == OUTCOME_TIER[Outcome(t.outcome)]
    assert [t.position for t in trace.tokens] == list(range(n))
    assert sum(r.emitted for r in trace.rounds) == n
    for r in trace.rounds:
        mine = [t for t in trace.tokens if t.round == r.index]
        assert len(mine) == r.emitted
        assert r.accepted <= r.drafted
        kept = [t for t in mine if t.outcome in ("direct-accepted", "slim-accepted", "full-accepted")]
        assert len(kept) == r.accepted


def test_kv_caches_of_all_three_depths_match_recomputation_after_rejections(bundle):
    """Every prediction the run computed with a KV cache equals a no-cache forward of that prefix."""
    bundle.memo.clear()
    trace = generate(bundle, PROMPT, mixed_config(), replay=False)
    m = summarize(trace)
    assert m["rejection_rate"] > 0 and m["drafter_calls"] and m["slim_calls"] and m["full_calls"]
    model = bundle.verifier.model
    routes = {memo_key(bundle.verifier.name, torch.float32, route): route
              for route in (resolve_route(r, model.config) for r in ("full", BASE.slim_route, BASE.draft_route))}
    checked = set()
    for (key, prefix), logits in list(bundle.memo._entries.items()):
        route = routes[key]
        with routed(route), torch.inference_mode():
            expected = model(input_ids=torch.tensor([prefix]), use_cache=False).logits[0, -1]
        assert torch.allclose(logits, expected, atol=1e-4), (route.name, len(prefix))
        checked.add(route.name)
    assert checked == {"full", "skip-middle-25", "skip-middle-50"}


def test_replay_from_the_memo_reproduces_tokens_and_cost_without_running_models(bundle):
    real = generate(bundle, PROMPT, mixed_config(), replay=False)
    again = generate(bundle, PROMPT, mixed_config(), replay=True)
    assert again.token_ids == real.token_ids
    assert [t.outcome for t in again.tokens] == [t.outcome for t in real.tokens]
    assert summarize(again)["modelled_cost"] == pytest.approx(summarize(real)["modelled_cost"])
    calls = [c for r in again.rounds for c in r.calls]
    assert all(c.from_memo and c.wall_s == 0 for c in calls)
    assert not summarize(again)["timing_complete"]


def test_sampling_is_reproducible_with_a_fixed_seed(bundle):
    config = mixed_config().with_(temperature=0.9, top_p=0.95, seed=7)
    a = generate(bundle, PROMPT, config, replay=False)
    b = generate(bundle, PROMPT, config, replay=False)
    c = generate(bundle, PROMPT, config.with_(seed=8), replay=False)
    assert a.token_ids == b.token_ids
    assert [t.outcome for t in a.tokens] == [t.outcome for t in b.tokens]
    assert a.token_ids != c.token_ids


def test_separate_drafter_model_with_the_same_tokenizer():
    bundle = tiny_bundle("llama", layers=6, drafter_layers=2)
    config = BASE.with_(drafter="model")
    plain = generate(bundle, PROMPT, config.with_(mode="plain"))
    assert generate(bundle, PROMPT, config.with_(mode="sd")).token_ids == plain.token_ids
    trace = generate(bundle, PROMPT, config.with_(tau_accept=0.3, tau_slim=0.2))
    assert summarize(trace)["drafter_calls"] > 0
    assert "tiny-drafter" in trace.models["drafter"]


def test_mismatched_tokenizers_are_refused():
    verifier = LoadedModel("v", tiny_model(), char_tokenizer(), torch.device("cpu"), torch.float32)
    drafter = LoadedModel("d", tiny_model(layers=2, vocab=45), char_tokenizer(extra="XY"), torch.device("cpu"),
                          torch.float32)
    with pytest.raises(TokenizerMismatchError, match="tokenizers differ"):
        ModelBundle(verifier=verifier, drafter=drafter)


@pytest.mark.parametrize("family", ["qwen2", "mistral", "gemma3_text"])
def test_routing_and_exactness_hold_for_other_families(family):
    bundle = tiny_bundle(family, layers=6)
    config = BASE.with_(max_new_tokens=16)
    plain = generate(bundle, PROMPT, config.with_(mode="plain"))
    assert generate(bundle, PROMPT, config.with_(mode="sd"), replay=False).token_ids == plain.token_ids
    mixed = generate(bundle, PROMPT, config.with_(tau_accept=0.4, tau_slim=0.3), replay=False)
    assert len(mixed.tokens) >= 1
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT, chat_template=False)
    route = resolve_route("skip-middle-50", bundle.verifier.model.config)
    forced = generate(bundle, PROMPT, config.with_(tau_accept=0.0, tau_slim=0.0), replay=False)
    own = greedy_without_cache(bundle.verifier.model, ids, 16, route)
    stop = own.index(0) if 0 in own else len(own)  # a stop token is never trusted directly
    assert forced.token_ids[:stop] == own[:stop]


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
    loaded = load_model(str(tmp_path))
    assert loaded.num_layers == 6
    trace = generate(ModelBundle(verifier=loaded), PROMPT, BASE.with_(mode="plain", max_new_tokens=5))
    assert len(trace.tokens) == 5


def test_streaming_yields_each_round_and_a_stop_request_ends_the_run(bundle):
    from core import iter_generate

    config = mixed_config()
    seen = []
    for trace in iter_generate(bundle, PROMPT, config, replay=False):
        seen.append(len(trace.tokens))
    assert seen == sorted(seen) and len(set(seen)) > 3, "the trace grows round by round"
    rounds_done = []
    stopped = generate(bundle, PROMPT, config, replay=False,
                       should_stop=lambda: rounds_done.append(1) or len(rounds_done) > 3)
    assert stopped.stop_reason == "cancelled" and len(stopped.rounds) == 3
    assert 0 < len(stopped.tokens) < 40


def test_full_verifier_rejection_sampling_is_exact_in_distribution(bundle):
    """SD's first token, over many seeds, follows the full model's own sampling distribution."""
    config = BASE.with_(mode="sd", gamma=2, max_new_tokens=1, temperature=1.5, tau_accept=1.0, tau_slim=1.0)
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT, chat_template=False)
    with torch.inference_mode():
        logits = bundle.verifier.model(input_ids=torch.tensor([ids])).logits[0, -1]
    target = torch.softmax(logits / 1.5, dim=-1)
    runs = 3000
    counts = torch.zeros_like(target)
    for seed in range(runs):  # the memo makes every run after the first cost no model pass
        counts[generate(bundle, PROMPT, config.with_(seed=seed)).token_ids[0]] += 1
    freq = counts / runs
    tolerance = 4 * torch.sqrt(target * (1 - target) / runs) + 0.003
    assert torch.all((freq - target).abs() <= tolerance), (freq - target).abs().max()
