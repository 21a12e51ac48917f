"""core.tools.tune on a tiny model: the recommendation meets its target on the prompts it was tuned on."""

import json

import pandas as pd
import pytest

from core import generate
from core.analysis.textdiff import word_diff
from core.analysis.tradeoffs import pareto_front
from core.analysis.tuning import (
    SPEED,
    Target,
    config_of,
    evaluate,
    grid_configs,
    tune,
)
from core.config import DecodeConfig
from core.errors import ConfigError
from core.tools.tune_result import write_outputs

PROMPTS = ["hello there, how are you", "abc abc abc abc"]


@pytest.fixture(scope="module")
def bundle():
    from tiny import tiny_bundle

    return tiny_bundle(layers=6)


@pytest.mark.parametrize("target", [Target("words_differing", 0.05), Target("agreement", 0.9),
                                    Target("words_differing", 0.05, over_classic_sd=True)])
def test_recommendation_meets_its_target_on_the_tuning_prompts(bundle, target, tmp_path):
    base = DecodeConfig(max_new_tokens=12, draft_route="skip-middle-50", slim_route="skip-middle-25")
    configs = grid_configs(base, [0.0, 0.3, 0.6], [2, 4], ["prob"], ["skip-middle-25"])
    result = tune(bundle, PROMPTS, target, configs)
    assert len(result.grid) == len(configs) == 2 * 10
    classic = result.grid[(result.grid.tau_accept == 1.0) & (result.grid.tau_slim == 1.0)]
    assert (classic["words_differing"] == 0).all() and (classic["agreement"] == 1.0).all(), "classic SD is exact"
    # Re-run the recommendation from scratch: it meets the target, and it is the fastest point that does.
    again = evaluate(bundle, PROMPTS, config_of(base, result.recommended),
                     {p: generate(bundle, p, base.with_(mode="plain"))
                      for p in PROMPTS})
    assert target.met(again)
    assert again[SPEED] == pytest.approx(result.recommended[SPEED])
    assert result.recommended[SPEED] == pytest.approx(result.grid[result.grid.meets_target][SPEED].max())
    paths = write_outputs(result, tmp_path)
    assert all(p.exists() for p in paths)
    assert json.loads(paths[2].read_text())["recommended"]["tau_accept"] == result.recommended["tau_accept"]


def test_pareto_front_keeps_only_undominated_points():
    grid = pd.DataFrame({SPEED: [1.0, 2.0, 1.5, 3.0, 2.0], "words_differing": [0.0, 0.1, 0.2, 0.3, 0.05]})
    front = pareto_front(grid)
    assert list(front[SPEED]) == [1.0, 2.0, 3.0] and list(front["words_differing"]) == [0.0, 0.05, 0.3]
    grid["agreement"] = [1.0, 0.9, 0.8, 0.7, 0.95]
    agreement = pareto_front(grid, "agreement")
    assert list(agreement[SPEED]) == [1.0, 2.0, 3.0] and list(agreement["agreement"]) == [1.0, 0.95, 0.7]


def test_words_differing_counts_changed_words():  # tune uses the project's one definition (core.analysis.textdiff)
    assert word_diff("the cat sat", "the cat sat").words_differing == 0.0
    assert word_diff("the dog sat", "the cat sat").words_differing == pytest.approx(1 / 3)
    assert word_diff("", "").words_differing == 0.0


def test_grid_always_holds_classic_sd_and_refuses_no_prompts(bundle):
    configs = grid_configs(DecodeConfig(), [0.5], [4], ["prob"], ["auto-slim"])
    assert {(c.tau_accept, c.tau_slim) for c in configs} == {(0.5, 0.5), (1.0, 0.5), (1.0, 1.0)}
    with pytest.raises(ConfigError, match="at least one prompt"):
        tune(bundle, [], Target("agreement", 0.9), configs)


def test_given_slim_taus_each_pairs_with_every_tau_accept_and_tier_two_off_stays_in_the_grid():
    """--slim-taus 1.0 tunes tier 1 alone; other values are paired with every tau_accept, 1.0 (tier 1 off) too."""
    alone = grid_configs(DecodeConfig(), [0.8, 0.9], [4], ["prob"], ["auto-slim"], slim_taus=[1.0])
    assert {(c.tau_accept, c.tau_slim) for c in alone} == {(0.8, 1.0), (0.9, 1.0), (1.0, 1.0)}
    given = grid_configs(DecodeConfig(), [0.9], [4], ["prob"], ["auto-slim"], slim_taus=[0.6])
    assert {(c.tau_accept, c.tau_slim) for c in given} == {(0.9, 0.6), (0.9, 1.0), (1.0, 0.6), (1.0, 1.0)}


def test_a_target_relative_to_classic_sd_reads_classic_sds_words_from_the_grid():
    """bf16 moves words for every k-token method (classic SD 5 % here): "+1 point" keeps classic SD and what is
    within a point of it; an absolute 1 % would keep nothing."""
    grid = pd.DataFrame({"tau_accept": [1.0, 1.0, 0.8, 0.8, 0.7], "tau_slim": [1.0, 1.0, 1.0, 0.6, 1.0],
                         "gamma": [4, 6, 6, 6, 6], "words_differing": [0.06, 0.05, 0.059, 0.061, 0.2]})
    target = Target("words_differing", 0.01, over_classic_sd=True).resolved(grid)
    assert target.classic_sd == pytest.approx(0.05) and target.ceiling == pytest.approx(0.06)
    assert [target.met(r) for _, r in grid.iterrows()] == [True, True, True, False, False]
    assert "classic SD's 0.050 + 0.01" in target.describe()
    assert not any(Target("words_differing", 0.01).met(r) for _, r in grid.iterrows())
    with pytest.raises(ValueError, match="needs classic SD"):
        Target("words_differing", 0.01, over_classic_sd=True).resolved(grid[grid.tau_accept < 1.0])
