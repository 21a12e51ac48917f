"""The pair calibration (python -m core.tools.calibrate --pair) on a tiny model: ranked vs searched masks per budget,
held-apart scores at the calibration threshold, the drafter's coverage, and a preset that resolves."""

import pytest
from tiny import tiny_bundle

from core.analysis.mask_search import margin_violation
from core.models.layer_routes import route_from_dict
from core.tools.calibrate import pair_table_lines as table_lines
from core.tools.calibrate_pair import MarginObjective, layer_influence, run

PROMPTS = ("the cat sat on", "a dog ran far", "the mat is red", "one two three")


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle("llama", layers=6, drafter_layers=2, avoid_eos=True, middle_scale=0.1)


@pytest.fixture(scope="module")
def result(bundle):
    return run(bundle, "tiny", "test", tokens=10, random_count=3, generations=1, children=2, save=False,
               prompts=PROMPTS, log=lambda *_: None)


def test_every_budget_has_a_ranked_and_a_searched_row(result):
    labels = [r["label"] for r in result["table"]]
    for pct in (25, 35, 45):
        assert f"{pct} % ranked" in labels and f"{pct} % searched" in labels
    for pct in (25, 35, 45):
        ranked, searched = (next(r for r in result["table"] if r["label"] == f"{pct} % {kind}")
                            for kind in ("ranked", "searched"))
        assert searched["objective"] <= ranked["objective"]  # the ranking is a seed: the search never does worse


def test_held_apart_rows_use_the_calibration_threshold(result):
    for row in result["table"]:
        assert row["held_apart"]["tau_slim"] == row["calibration"]["tau_slim"]
        assert 0.0 <= row["held_apart"]["coverage"] <= 1.0 and 0.0 < row["held_apart"]["cost"] < 1.0


def test_the_shipped_route_is_the_best_held_apart_net_saving_and_resolves(bundle, result):
    searched = [r for r in result["table"] if "searched" in r["label"]]
    assert result["held_apart"]["net_saving"] == max(r["held_apart"]["net_saving"] for r in searched)
    route = route_from_dict(result["routes"]["slim"], bundle.verifier.model.config)
    assert 0 not in route.skipped and 5 not in route.skipped  # layer 0 sizes the cache; the last writes the answer
    assert result["drafter"]["tokens"] == 20 and "tau 0.9" in result["drafter"]
    text = "\n".join(table_lines(result))
    assert "| 45 % searched |" in text and "shipped:" in text and "drafter on held-apart text" in text


def test_restricted_heads_are_scored_for_the_shipped_mask_and_cost_less(bundle):
    narrow = run(bundle, "tiny", "test", tokens=10, random_count=2, generations=1, children=1, save=False,
                 prompts=PROMPTS, vocab_tops=(40, 10**6), sublayer=False, log=lambda *_: None)
    heads = [r for r in narrow["table"] if r.get("vocab_top")]
    assert [r["label"].split(",")[0] for r in heads] == ["shipped mask", "all layers"]  # 10**6 > vocabulary: none
    shipped = next(r for r in narrow["table"] if r["route_spec"] == narrow["routes"]["slim"] and not r.get("vocab_top"))
    assert heads[0]["held_apart"]["cost"] < shipped["held_apart"]["cost"]
    assert heads[1]["route"].startswith("full") and heads[1]["held_apart"]["cost"] < 1.0
    assert narrow["routes"]["slim"] == next(r for r in narrow["table"] if "searched" in r["label"]
                                            and r["held_apart"]["net_saving"] == narrow["held_apart"]["net_saving"]
                                            )["route_spec"]  # a restricted head is reported, never shipped


def test_tier_two_is_scored_on_the_tokens_the_drafter_is_unsure_of(result):
    t = result["tier2_regime"]
    unsure = 1 - result["drafter"]["tau 0.9"]["coverage"]
    assert t["tau_accept"] == 0.9 and t["share"] == pytest.approx(unsure)
    assert t["tokens"] == round(unsure * result["drafter"]["tokens"])
    assert t["net_saving"] == pytest.approx(t["coverage"] - t["cost"])
    assert "tier 2's own tokens" in "\n".join(table_lines(result))


def test_the_objective_is_zero_for_the_full_model_at_margin_zero(bundle):
    from core.analysis.slim_calibration import Calibrator, build_texts

    cal = Calibrator(bundle, build_texts(bundle, list(PROMPTS[:2]), 6))
    objective = MarginObjective(cal, margin=0.0)
    assert objective(()) == pytest.approx(0.0, abs=1e-6)  # the full model's own choice is its own top-1
    assert objective((2, 3)) >= 0.0
    assert sorted(layer_influence(cal)) == list(range(6))
    assert margin_violation(cal.full_hidden @ objective.weight.T, objective.targets, 0.0) == pytest.approx(0.0)


def test_texts_are_cached_per_model_prompts_and_length(bundle, tmp_path):
    from core.tools.calibrate_pair import cached_texts

    path = tmp_path / "texts.json"
    first = cached_texts(bundle, ["the cat"], ["a dog"], 5, path)
    assert path.is_file()
    again = cached_texts(bundle, ["the cat"], ["a dog"], 5, path)
    assert [t.sequence for t in again[0]] == [t.sequence for t in first[0]] and again[1][0].first == first[1][0].first
    other = cached_texts(bundle, ["the cat"], ["a dog"], 3, path)  # another length: regenerated, not reused
    assert len(other[0][0].sequence) - other[0][0].first <= 3
