"""A cheaper drafter (int8 / int4 weights, a restricted head): the layers approximate the model, the head only
proposes tokens the verifier can score, a quantisation the device cannot run fails with one line before anything
is loaded, and the verifier still decides the output: classic SD and audited VIA-SD with a quantised drafter
reproduce plain greedy decoding token for token in fp32 (with accepted, rejected and tier-1 drafts asserted)."""

import copy

import pytest
import torch
from tiny import VOCAB, char_tokenizer, loaded, save_tiny_pair, tiny_model

from core import DecodeConfig, generate
from core.decoding.cost import CostModel
from core.decoding.cost_profiles import model_signature
from core.decoding.scorer import Scorer
from core.errors import ModelLoadError, TokenizerMismatchError
from core.models import drafter_quant
from core.models.drafter_quant import DRAFTER_QUANTS, DrafterQuant, check, quantise
from core.models.layer_routes import resolve_route
from core.models.loading import ModelBundle, load_bundle, quantise_drafter
from core.models.quantised import WeightOnlyLinear, weight_bytes
from core.models.restricted_head import RestrictedHead

PROMPT = "the cat sat on the mat. the cat sat on the mat and the dog sat on the log. the cat"
CPU = torch.device("cpu")


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_weight_only_layers_approximate_the_linear_they_replace(bits, dtype):
    torch.manual_seed(0)
    linear = torch.nn.Linear(128, 40, bias=True).to(dtype)  # 40 rows: int4 pads to 48 and slices back
    x = torch.randn(3, 5, 128, dtype=dtype)
    quantised = WeightOnlyLinear(linear, bits)
    with torch.inference_mode():
        want, got = linear(x).float(), quantised(x).float()
    assert got.shape == want.shape and got.dtype == torch.float32
    error = (got - want).norm() / want.norm()
    assert error < (0.02 if bits == 8 else 0.15)
    assert quantised.weight_bytes < linear.weight.numel() * linear.weight.element_size() * (0.6 if bits == 8 else 0.4)


def test_settings_parse_to_one_spelling_and_bad_ones_fail_with_one_line():
    assert DrafterQuant.parse(None).is_none and DrafterQuant.parse(" INT4 ").name == "int4"
    assert DrafterQuant.parse("int4+vocab").vocab_top == drafter_quant.VOCAB_TOP
    assert DrafterQuant.parse("int8+vocab4096").name == "int8+vocab4096"
    for name in DRAFTER_QUANTS:
        assert DrafterQuant.parse(name).name == name
    for bad in ("int3", "fp8", "int4+vocab2", 7, "int4 vocab"):
        with pytest.raises(ModelLoadError) as err:
            DrafterQuant.parse(bad)
        assert "\n" not in str(err.value) and "int8" in str(err.value)


def test_an_unsupported_kernel_is_one_line_naming_what_runs_here(monkeypatch):
    monkeypatch.setattr(drafter_quant, "kernel_error", lambda bits, device, dtype: "no kernel" if bits == 4 else None)
    with pytest.raises(ModelLoadError) as err:
        check("int4+vocab", CPU, torch.float32)
    message = str(err.value)
    assert "\n" not in message and "int4+vocab" in message and "supported here: none, int8" in message
    assert check("int8", CPU, torch.float32).bits == 8


def test_a_failed_quantisation_loads_nothing_and_a_mismatched_tokenizer_is_refused(tmp_path, monkeypatch):
    verifier, drafter = save_tiny_pair(tmp_path)
    loads = []
    real = drafter_quant.kernel_error
    monkeypatch.setattr(drafter_quant, "kernel_error", lambda bits, device, dtype: "no kernel" if bits == 4 else None)
    monkeypatch.setattr("core.models.loading.load_model", lambda *a, **k: loads.append(a) or None)
    with pytest.raises(ModelLoadError, match="cannot run"):
        load_bundle(str(verifier), str(drafter), dtype="float32", drafter_quant="int4")
    assert loads == []  # refused before any model was read: whatever was loaded before stays in use
    monkeypatch.undo()
    assert real is drafter_quant.kernel_error
    other = tmp_path / "other"
    tiny_model("llama", 2, seed=1, vocab=VOCAB + 1).save_pretrained(other)
    char_tokenizer(extra="#").save_pretrained(other)
    with pytest.raises(TokenizerMismatchError):
        load_bundle(str(verifier), str(other), dtype="float32", drafter_quant="int8")
    bundle = load_bundle(str(verifier), str(drafter), dtype="float32", drafter_quant="int8")
    assert bundle.drafter.quant == "int8" and bundle.verifier.quant == "none"
    with pytest.raises(ModelLoadError, match="needs a separate drafter"):
        load_bundle(str(verifier), None, dtype="float32", drafter_quant="int4")


def _restricted(top=12, fallback=0.5):
    model = tiny_model("llama", 2, seed=3)
    quantise(model, DrafterQuant("none", top), {0})
    head = model.get_output_embeddings()
    head.fallback_below = fallback
    return model, head


def test_the_restricted_head_scores_frequent_and_in_text_tokens_only():
    model, head = _restricted(top=12, fallback=0.0)  # never falls back: the restriction alone
    assert isinstance(head, RestrictedHead)
    ids = torch.tensor([[20, 21, 30, 5]])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0]
    allowed = torch.isfinite(logits[-1]).nonzero().flatten().tolist()
    assert set(allowed) == set(range(12)) | {20, 21, 30}  # ids < 12 (0, the stop token, among them) + the text
    assert head.history == [20, 21, 30, 5]
    with torch.inference_mode():  # a rolled-back cache: the next call starts at position 2
        model(input_ids=torch.tensor([[7, 8]]), position_ids=torch.tensor([[2, 3]]))
    assert head.history == [20, 21, 7, 8] and 30 not in head.extra_ids()


def test_two_texts_interleaved_on_one_restricted_head_each_see_their_own_tokens():
    """Runs side by side (grid points, a cache borrowed from the pool) call one drafter in turn: each call's
    allowed tokens are its own text's, so its logits are what it gets alone."""
    model, head = _restricted(top=12, fallback=0.0)
    route = resolve_route("full", model.config)
    a_text, b_text = [20, 21, 30, 5, 22, 23], [35, 36, 37, 5, 38, 39]
    alone = [Scorer("drafter", model, route, None, "tiny").forward(t, 4, 6) for t in (a_text, b_text)]
    a, b = Scorer("drafter", model, route, None, "tiny"), Scorer("drafter", model, route, None, "tiny")
    a.forward(a_text, 1, 3)  # each cache holds its text's first tokens, then the two continue in turn
    b.forward(b_text, 1, 3)
    together = [a.forward(a_text, 4, 6), b.forward(b_text, 4, 6)]
    for got, want, text in zip(together, alone, (a_text, b_text), strict=True):
        allowed = set(torch.isfinite(got[-1]).nonzero().flatten().tolist())
        assert allowed == set(range(12)) | {t for t in text if t >= 12}
        assert torch.allclose(got, want, atol=1e-5)


def test_an_unsure_restricted_row_is_scored_by_the_full_head():
    model, head = _restricted(top=12, fallback=1.01)  # always unsure: every row falls back
    plain = copy.deepcopy(tiny_model("llama", 2, seed=3))
    ids = torch.tensor([[20, 21, 30, 5]])
    with torch.inference_mode():
        got, want = model(input_ids=ids).logits, plain(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-5) and head.fallbacks == head.rows == 4


@pytest.fixture(scope="module")
def verifier():
    return loaded("tiny-verifier", tiny_model("llama", 6, middle_scale=0.1, avoid_eos=True))


@pytest.fixture(scope="module")
def plain(verifier):
    bundle = ModelBundle(verifier=verifier)
    return generate(bundle, PROMPT, DecodeConfig(mode="plain", max_new_tokens=40, chat_template=False)).token_ids


def _quantised_bundle(verifier, spec):
    """The verifier's own weights as its drafter, quantised: a drafter that is often but not always right. On a
    device without the kernel (int4 on CUDA wants bf16; these models are fp32) the test says so and skips."""
    problem = drafter_quant.kernel_problem(DrafterQuant.parse(spec), verifier.device, verifier.dtype)
    if problem is not None:
        pytest.skip(f"{spec} on {verifier.device.type}: {problem}")
    drafter = loaded("tiny-drafter", copy.deepcopy(verifier.model))
    return ModelBundle(verifier=verifier, drafter=quantise_drafter(drafter, spec))


@pytest.mark.parametrize("spec", ["int8", "int4", "int8+vocab16", "int4+vocab16", "w8a8", "w8a8+vocab16"])
def test_a_quantised_drafter_leaves_greedy_output_exact(verifier, plain, spec):
    bundle = _quantised_bundle(verifier, spec)
    base = DecodeConfig(drafter="model", gamma=4, max_new_tokens=40, chat_template=False)
    sd = generate(bundle, PROMPT, base.with_(mode="sd"), replay=False)
    audited = generate(bundle, PROMPT, base.with_(mode="via", tau_accept=0.6, tau_slim=1.0, copy_evidence="audit",
                                                  audit_span=6), replay=False)
    assert sd.token_ids == plain and audited.token_ids == plain
    kept = sum(r.accepted for r in sd.rounds)
    assert 0 < kept < sum(r.drafted for r in sd.rounds)  # drafts accepted and rejected: the path is real
    assert any(t.tier == 1 for t in audited.tokens)  # tier 1 kept drafts on trust, and the audit held them to plain
    assert all(0 <= t < VOCAB for r in sd.rounds for t in r.draft_tokens)  # every proposal a verifier token
    assert spec in sd.models["drafter"] or "weights" in sd.models["drafter"]


def test_the_memo_keeps_a_quantised_drafter_apart_and_replays_it_exactly(verifier):
    bundle = _quantised_bundle(verifier, "int4+vocab16")
    assert bundle.drafter.identity == "tiny-drafter+int4+vocab16" and bundle.drafter.label.endswith(")")
    config = DecodeConfig(mode="via", drafter="model", gamma=4, tau_accept=0.7, tau_slim=1.0, max_new_tokens=30,
                          chat_template=False)
    real = generate(bundle, PROMPT, config, replay=False)
    replayed = generate(bundle, PROMPT, config.with_(tau_accept=0.5), replay=True)
    fresh = generate(_quantised_bundle(verifier, "int4+vocab16"), PROMPT, config.with_(tau_accept=0.5), replay=False)
    assert replayed.token_ids == fresh.token_ids and real.token_ids


def test_costs_know_a_quantised_drafter_reads_fewer_bytes(verifier):
    drafter = copy.deepcopy(verifier.model)
    int4 = _quantised_bundle(verifier, "int4").drafter.model
    assert model_signature(int4) == model_signature(drafter) + "-int4"
    assert weight_bytes(int4.model.layers) < 0.3 * weight_bytes(drafter.model.layers)  # fp32 -> int4 + scales
    costs = CostModel(verifier.model)  # the modelled accelerator: a pass costs the bytes it reads
    full = len(int4.model.layers)
    assert costs.cost_units(int4, full, 1) < 0.35 * costs.cost_units(drafter, full, 1)


def test_hugging_face_assisted_generation_runs_a_restricted_drafter(verifier):
    bundle = _quantised_bundle(verifier, "int8+vocab16")
    ids = torch.tensor([bundle.verifier.tokenizer(PROMPT)["input_ids"]], device=verifier.device)
    with torch.inference_mode():
        greedy = verifier.model.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0, eos_token_id=0)
        assisted = verifier.model.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0, eos_token_id=0,
                                           assistant_model=bundle.drafter.model)
    assert assisted.tolist() == greedy.tolist()
    head = bundle.drafter.model.get_output_embeddings()
    assert head.rows > 0 and set(ids[0].tolist()) <= set(head.history)


def test_the_profile_measures_each_drafter_setting_as_its_own_model(tmp_path):
    from core.tools.profile import measure_profile

    verifier, drafter = save_tiny_pair(tmp_path)
    bundle = load_bundle(str(verifier), str(drafter), dtype="float32", drafter_quant="none")
    profile = measure_profile(bundle, "tiny", routes=("full", "early-exit-50"), repeats=1, token_counts=(1, 2, 4),
                              drafter_quants=("none", "int8", "int4+vocab8"))
    base = model_signature(bundle.drafter.model)
    assert {base, base + "-int8", base + "-int4+vocab8", model_signature(bundle.verifier.model)} == set(profile.models)
    assert "int8 weights" in profile.label and "head over 8 ids" in profile.label


@pytest.mark.parametrize("spec", ["none", "int4", "w8a8"])
def test_the_pairs_recommended_setting_is_exact_in_greedy(verifier, plain, spec):
    """core.config.preset("qwen2.5-coder") with its drafter (or the unquantised one) reproduces plain greedy
    decoding token for token in fp32, with tier 1 keeping drafts on trust (and, for the int4 drafter, which is
    sometimes wrong where it is sure, the audit refusing some: the path is real)."""
    from core.config import preset
    from core.models.pairs import QWEN_CODER_PAIR

    recommended = preset(QWEN_CODER_PAIR.settings)
    assert recommended.copy_evidence == "audit" and QWEN_CODER_PAIR.drafter_quant == "auto"
    bundle = _quantised_bundle(verifier, spec)
    config = recommended.with_(max_new_tokens=40, chat_template=False, tau_accept=min(recommended.tau_accept, 0.6))
    trace = generate(bundle, PROMPT, config, replay=False)
    assert trace.token_ids == plain
    assert any(t.tier == 1 for t in trace.tokens)
    assert spec != "int4" or any(t.reason == "audit-refused" for t in trace.tokens)
    exact = generate(bundle, PROMPT, recommended.with_(max_new_tokens=40, chat_template=False), replay=False)
    assert exact.token_ids == plain


def test_a_second_drafter_setting_of_a_pair_shares_the_verifier_already_loaded(tmp_path, monkeypatch):
    """The one-hour soak held the pair's 1.5B twice (its bf16-drafter and int4-drafter settings: 18 GB resident):
    the verifier is never quantised, so a second setting reuses it; a verifier of another name or dtype loads."""
    verifier, drafter = save_tiny_pair(tmp_path)
    first = load_bundle(str(verifier), str(drafter), dtype="float32", drafter_quant="none")
    loads = []
    real_load = load_bundle.__globals__["load_model"]
    monkeypatch.setattr("core.models.loading.load_model", lambda name, *a, **k: loads.append(name) or real_load(
        name, *a, **k))
    second = load_bundle(str(verifier), str(drafter), dtype="float32", drafter_quant="int8",
                         loaded_verifier=first.verifier)
    assert second.verifier is first.verifier and loads == [str(drafter)]
    assert second.drafter.quant == "int8" and first.drafter.quant == "none" and second.memo is not first.memo
    config = DecodeConfig(mode="sd", drafter="model", gamma=4, max_new_tokens=16, chat_template=False)
    assert generate(first, PROMPT, config).token_ids == generate(second, PROMPT, config).token_ids  # exact SD
    load_bundle(str(drafter), str(drafter), dtype="float32", drafter_quant="none", loaded_verifier=first.verifier)
    load_bundle(str(verifier), str(drafter), dtype="bfloat16", drafter_quant="none", loaded_verifier=first.verifier)
    assert loads == [str(drafter), str(drafter), str(drafter), str(verifier), str(drafter)]
