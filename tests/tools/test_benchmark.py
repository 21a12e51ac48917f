"""The benchmark's anchors on tiny random models: Hugging Face's decoders and ours must emit the same greedy tokens."""

import pytest
from tiny import tiny_bundle

from core.decoding.cost import CostModel
from core.tools.bench_report import call_shape, format_row, summary
from core.tools.bench_rows import HF_ASSISTED, HF_GREEDY, HF_LOOKUP, SAME_DRAFTS, Row, run_prompt
from core.tools.benchmark import parse
from examples import ExamplePrompt


@pytest.fixture(scope="module")
def rows():
    bundle = tiny_bundle("llama", layers=4, drafter_layers=2)
    args = parse(["--max-new-tokens", "12", "--drafters", "ngram,self,model", "--gamma", "3", "--lookup-tokens", "4"])
    costs = CostModel(bundle.verifier.model)
    text = "the cat sat on the mat. the cat sat on the mat. the cat"
    return run_prompt(bundle, ExamplePrompt("tiny", 0, text), "tiny", args, costs, costs, flip=False)


def test_every_method_runs_once_in_a_stable_order(rows):
    assert [r.key for r in rows] == [HF_GREEDY, "plain", f"{HF_LOOKUP} ngram", "SD ngram", f"{SAME_DRAFTS} ngram",
                                     "VIA-SD ngram",
                                     "SD self", "VIA-SD self", f"{HF_ASSISTED} model", "SD model", "VIA-SD model"]


def test_hf_anchors_and_our_lossless_modes_emit_the_full_models_greedy_tokens(rows):
    plain = next(r for r in rows if r.method == "plain")
    assert len(plain.token_ids) > 0
    for row in rows:
        if row.method != "VIA-SD" or row.drafter == "ngram":  # HF's, classic SD and audited copies are exact
            assert row.token_ids == plain.token_ids, row.key
            assert row.words_differing in (0.0, None) or row.words_differing == pytest.approx(0.0)


def test_rows_carry_ratios_predictions_and_print(rows):
    plain = next(r for r in rows if r.method == "plain")
    assert plain.ratios["plain"] == pytest.approx(1.0)
    assert plain.predicted == pytest.approx(1.0)  # plain's calls are exactly what plain costs
    for row in rows:
        assert set(row.ratios) >= {HF_GREEDY, HF_LOOKUP, "plain"}
        assert (row.predicted is None) == (row.trace is None)
        assert row.key.split()[0] in format_row(row, plain.token_ids)
    text = "\n".join(summary(rows))
    assert "plain vs HF greedy" in text and "SD ngram vs HF prompt lookup" in text
    assert f"floor: VIA-SD ngram vs {SAME_DRAFTS} ngram" in text and "words differing (median): 0.0%" in text
    assert "profile prediction vs measured" in text


def test_summary_flags_a_missed_target():
    fast = Row("p", "plain", "-", [1, 2], 1.0, ratios={HF_GREEDY: 0.8, "plain": 1.0})
    assert "MISSED by 0.200" in "\n".join(summary([fast]))


def test_call_shape_compares_each_kind_of_pass_with_the_profile(rows):
    from core.decoding.cost_profiles import CostProfile, ModelCosts, model_signature
    verifier = tiny_bundle("llama", layers=4).verifier.model  # same shape and seed: same signature
    laws = ModelCosts(4, 1e-3, 1e-3, 1e-3, 1e-4, 1e-3, 1e-4)
    profile = CostProfile("m", "measured", "hand", "cpu", "float32", "s", {model_signature(verifier): laws})
    lines = call_shape(rows, CostModel(verifier, profile))
    assert "full 1 token 1.00" in lines[-1] and "drafter" in lines[-1]
    assert call_shape(rows, CostModel(verifier)) == []  # a modelled profile has no seconds to compare
