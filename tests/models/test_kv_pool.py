"""The KV pool: a re-route starts from a finished run's caches and computes only its branch, with the same answer.

Tiny random models (tests/tiny.py); token counts, not timings."""

from __future__ import annotations

import pytest
import torch
from tiny import tiny_bundle, tiny_config

from core import DecodeConfig, generate
from core.decoding.scorer import full_history_cache
from core.models.kv_pool import KVPool, cache_bytes
from core.models.loading import ModelBundle

PROMPT = "the cat sat on the mat. the cat sat on the"
CONFIG = DecodeConfig(max_new_tokens=32, gamma=3, chat_template=False, draft_route="skip-middle-50",
                      slim_route="skip-middle-25", tau_accept=0.6, tau_slim=0.4)


@pytest.fixture(scope="module")
def models() -> ModelBundle:
    return tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)


def fresh(bundle: ModelBundle, pooled: bool = True) -> ModelBundle:
    """The same weights with an empty memo (and pool; `pooled=False`: a pool that keeps nothing)."""
    found = ModelBundle(verifier=bundle.verifier, drafter=bundle.drafter)
    if not pooled:
        found.memo.caches.max_bytes = 0
    return found


class Counted:
    """Counts the positions the verifier's model actually computes (every scorer runs the one model)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.tokens = 0
        self._hook = model.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module: object, args: tuple, kwargs: dict) -> None:
        self.tokens += int(kwargs["input_ids"].shape[1])

    def __enter__(self) -> Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self._hook.remove()


def cache_of(tokens: list[int], layers: int = 2, width: int = 4) -> tuple:
    cache = full_history_cache(tiny_config("llama", layers=layers))
    for layer in range(layers):
        kv = torch.zeros(1, 1, len(tokens), width)
        cache.update(kv, kv, layer)
    return cache, tokens


def test_the_pool_lends_a_copy_of_the_cache_sharing_the_longest_prefix() -> None:
    pool = KVPool(max_bytes=10**6)
    for tokens in ([1, 2, 3, 4], [1, 2, 9], [1, 2, 3, 5, 6]):
        pool.give("m", *cache_of(tokens))
    pool.give("other route", *cache_of([1, 2, 3, 4, 5, 6, 7]))
    cache, tokens = pool.lend("m", [1, 2, 3, 5, 7])
    assert tokens == [1, 2, 3, 5], "four shared positions beat three and two; the copy is cut where they part"
    assert all(layer.get_seq_length() == 4 for layer in cache.layers)
    cache.layers[0].keys.fill_(1.0)
    again, _ = pool.lend("m", [1, 2, 3, 5, 7])
    assert float(again.layers[0].keys.abs().sum()) == 0.0, "the pooled cache stays as it was: a borrower has a copy"
    assert pool.lend("m", [8, 8]) is None, "a cache sharing nothing is not worth lending"
    assert pool.lend("absent", [1, 2]) is None


def test_the_pool_keeps_a_few_caches_per_route_within_its_bytes() -> None:
    one = cache_bytes(cache_of([1, 2, 3])[0])
    pool = KVPool(max_bytes=10 * one, per_key=3)
    for last in range(5):
        pool.give("m", *cache_of([1, 2, last]))
    assert len(pool) == 3 and pool.lend("m", [1, 2, 0])[1] == [1, 2], "the oldest went first"
    assert pool.lend("m", [1, 2, 4])[1] == [1, 2, 4]
    small = KVPool(max_bytes=2 * one)
    for last in range(3):
        small.give(f"route {last}", *cache_of([1, 2, last]))
    assert len(small) == 2 and small.bytes <= 2 * one
    assert small.lend("route 0", [1, 2, 0]) is None
    nothing = KVPool(max_bytes=0)
    nothing.give("m", *cache_of([1, 2]))
    assert len(nothing) == 0, "a budget of 0 keeps nothing (the baseline of `own_prompt --no-kv-reuse`)"


def test_a_re_route_computes_only_its_branch_with_the_same_answer(models: ModelBundle) -> None:
    other = CONFIG.with_(tau_accept=0.4, tau_slim=0.3)
    answers, computed = {}, {}
    for pooled in (True, False):
        bundle = fresh(models, pooled)
        generate(bundle, PROMPT, CONFIG)
        with Counted(bundle.verifier.model) as counted:
            answers[pooled] = generate(bundle, PROMPT, other).token_ids
        computed[pooled] = counted.tokens
    alone = generate(fresh(models), PROMPT, other).token_ids
    assert answers[True] == answers[False] == alone, "a lent cache never changes an answer"
    prompt_tokens = len(PROMPT)  # one token per character
    assert computed[False] > computed[True] + prompt_tokens, "without the pool every scorer reads the prompt again"


def test_an_honest_timing_run_neither_borrows_nor_lends(models: ModelBundle) -> None:
    alone = fresh(models)
    timed = generate(alone, PROMPT, CONFIG, replay=False)
    assert len(alone.memo.caches) == 0, "a run timed for real leaves no cache"
    bundle = fresh(models)
    generate(bundle, PROMPT, CONFIG)
    kept = len(bundle.memo.caches)
    assert kept == 3, "a memo-allowed run leaves its drafter's, slim verifier's and full verifier's caches"
    with Counted(bundle.verifier.model) as counted:
        again = generate(bundle, PROMPT, CONFIG, replay=False)
    assert len(bundle.memo.caches) == kept and counted.tokens >= 3 * len(PROMPT), "its prefill is read, not lent"
    assert again.token_ids == timed.token_ids


def test_classic_sd_after_pooled_re_routes_is_still_plain_greedy(models: ModelBundle) -> None:
    """The greedy invariant with every cache lent: VIA-SD with both tiers off reproduces plain decoding."""
    bundle = fresh(models)
    for tau in (0.3, 0.5, 0.7):
        generate(bundle, PROMPT, CONFIG.with_(tau_accept=tau, tau_slim=tau))
    lent = bundle.memo.caches.lent
    exact = generate(bundle, PROMPT, CONFIG.with_(tau_accept=1.0, tau_slim=1.0, max_new_tokens=40))
    plain = generate(fresh(models), PROMPT, CONFIG.with_(mode="plain", max_new_tokens=40), replay=False)
    assert bundle.memo.caches.lent > lent >= 2, "the runs borrowed caches"
    assert exact.token_ids == plain.token_ids
