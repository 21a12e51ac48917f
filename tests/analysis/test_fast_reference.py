"""The fast reference: the full model's plain greedy answer, token for token, reusing what the run computed."""

from __future__ import annotations

import copy

import pytest
import torch
from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.analysis.fast_reference import exact_reference
from core.analysis.fidelity import reference_continuation
from core.models.loading import LoadedModel, ModelBundle

PROMPT = "the cat sat on the mat. the cat sat on the"
BASE = DecodeConfig(max_new_tokens=40, gamma=4, chat_template=False, draft_route="skip-middle-50",
                    slim_route="skip-middle-25")


@pytest.fixture(scope="module")
def bundle() -> ModelBundle:
    return tiny_bundle("llama", layers=6, drafter_layers=2, middle_scale=0.1, avoid_eos=True)


def fresh(bundle: ModelBundle) -> ModelBundle:
    return ModelBundle(verifier=bundle.verifier, drafter=bundle.drafter)


class PassCounter:
    """Forward passes of one model (every route of it), counted by a hook while the block runs."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model, self.count = model, 0

    def __enter__(self) -> PassCounter:
        self.handle = self.model.register_forward_hook(lambda *_: setattr(self, "count", self.count + 1))
        return self

    def __exit__(self, *_: object) -> None:
        self.handle.remove()


@pytest.mark.parametrize("config", [
    BASE.with_(tau_accept=0.5, tau_slim=0.3),
    BASE.with_(tau_accept=0.2, tau_slim=0.1, gamma=6),
    BASE.with_(drafter="model", tau_accept=0.6, tau_slim=0.4),
    BASE.with_(drafter="ngram", tau_accept=0.4, tau_slim=1.0, gamma=8),
    BASE.with_(mode="sd", drafter="model"),
    BASE.with_(mode="plain"),
])
def test_equals_plain_greedy_token_for_token(bundle: ModelBundle, config: DecodeConfig) -> None:
    b = fresh(bundle)
    run = generate(b, PROMPT, config)
    plain = reference_continuation(fresh(bundle), run, use_memo=False)
    found = exact_reference(b, run)
    assert found.tokens == plain
    assert found.method == ("the run itself" if config.mode != "via" else "classic SD")


def test_a_tiered_run_that_changed_the_text_is_not_taken_as_the_reference(bundle: ModelBundle) -> None:
    b = fresh(bundle)
    run = generate(b, PROMPT, BASE.with_(tau_accept=0.0, tau_slim=0.0))  # tier 1 keeps every draft
    plain = reference_continuation(fresh(bundle), run, use_memo=False)
    assert run.token_ids != plain, "the test needs a run whose tiers moved the text"
    assert exact_reference(b, run).tokens == plain


def test_the_verdicts_the_run_paid_for_are_not_paid_again(bundle: ModelBundle) -> None:
    """VIA-SD with both tiers off runs classic SD's rounds: the reference replays every pass from the memo."""
    b = fresh(bundle)
    run = generate(b, PROMPT, BASE.with_(drafter="model", tau_accept=1.0, tau_slim=1.0))
    with PassCounter(b.verifier.model) as verifier, PassCounter(b.drafter.model) as drafter:
        found = exact_reference(b, run)
    assert found.tokens == reference_continuation(fresh(bundle), run, use_memo=False)
    assert (verifier.count, drafter.count) == (0, 0)
    with PassCounter(b.verifier.model) as plain:
        reference_continuation(b, run, use_memo=False)
    assert plain.count == len(found.tokens), "plain decoding pays one verifier pass per token"


def test_tiers_on_cost_fewer_verifier_passes_than_plain(bundle: ModelBundle) -> None:
    b = fresh(bundle)
    run = generate(b, PROMPT, BASE.with_(drafter="model", tau_accept=0.6, tau_slim=0.4))
    with PassCounter(b.verifier.model) as verifier:
        found = exact_reference(b, run)
    assert 0 < verifier.count < len(found.tokens)


def test_reduced_precision_decodes_plainly(bundle: ModelBundle) -> None:
    """In bf16 a batched pass rounds otherwise: neither the run nor classic SD stands in for plain greedy."""
    v = bundle.verifier
    half = LoadedModel(v.name, copy.deepcopy(v.model).to(torch.bfloat16), v.tokenizer, v.device, torch.bfloat16)
    b = ModelBundle(verifier=half)
    for config in (BASE.with_(tau_accept=0.5, tau_slim=0.3), BASE.with_(mode="sd")):
        run = generate(b, PROMPT, config)
        found = exact_reference(b, run)
        assert found.method == "plain" and found.plain
        assert found.tokens == reference_continuation(b, run, use_memo=False)
    plain_run = generate(b, PROMPT, BASE.with_(mode="plain"))
    found = exact_reference(b, plain_run)
    assert found.method == "the run itself" and found.tokens == reference_continuation(b, plain_run, use_memo=False)


def test_in_reduced_precision_the_tiers_part_comes_first_then_numerics_split(bundle: ModelBundle) -> None:
    """bf16: words differing first against the run's classic-SD twin (what the tiers changed), then against plain
    greedy with classic SD's own distance from it recorded as numerics."""
    from app.fidelity_cache import FidelityCache
    from core.analysis.fast_reference import classic_sd_twin
    from core.analysis.textdiff import word_diff

    v = bundle.verifier
    half = LoadedModel(v.name, copy.deepcopy(v.model).to(torch.bfloat16), v.tokenizer, v.device, torch.bfloat16)
    b = ModelBundle(verifier=half)
    run = generate(b, PROMPT, BASE.with_(tau_accept=0.3, tau_slim=0.2))
    cache = FidelityCache()
    twin = classic_sd_twin(b, run)
    assert twin == generate(b, PROMPT, BASE.with_(mode="sd")).token_ids
    assert cache.tiers_first(b, run)
    assert run.fidelity.against == "classic SD" and run.fidelity.identical == (run.token_ids == twin)
    final = cache.attach(b, run)
    plain = reference_continuation(b, run, use_memo=False)
    assert final.against == "plain greedy" and final.identical == (run.token_ids == plain)
    text = lambda ids: v.tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
    assert final.numerics_words == word_diff(text(twin), text(plain)).words_differing
    assert not cache.tiers_first(b, run), "measured once per answer"
    exact = ModelBundle(verifier=bundle.verifier)
    assert not FidelityCache().tiers_first(exact, generate(exact, PROMPT, BASE.with_(tau_accept=0.3, tau_slim=0.2))), \
        "in float32 the exact reference is cheap already"
