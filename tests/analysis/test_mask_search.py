"""The slim-mask search on toy objectives (no model): it beats a one-at-a-time ranking where layers interact."""

import itertools

import pytest
import torch

from core.analysis.mask_search import margin_violation, search_masks

HARM = [0.1, 0.2, 0.25, 0.3, 0.9, 1.0, 0.35, 0.4, 0.8, 0.7]


def interacting(mask):
    """Each layer's harm alone, plus a large penalty for skipping two neighbours (they back each other up)."""
    return sum(HARM[i] for i in mask) + sum(2.0 for a, b in itertools.pairwise(mask) if b == a + 1)


def test_the_search_beats_the_ranking_when_layers_interact():
    ranking = tuple(sorted(sorted(range(10), key=HARM.__getitem__)[:4]))  # 0,1,2,3: all neighbours
    result = search_masks(interacting, range(10), 4, seeds=[ranking], random_count=10, generations=6, children=8)
    best = min(itertools.combinations(range(10), 4), key=interacting)
    assert result.best.value < interacting(ranking)
    assert result.best.value == pytest.approx(interacting(best))
    assert [s.value for s in result.scored] == sorted(s.value for s in result.scored)
    assert all(len(s.mask) == 4 and set(s.mask) <= set(range(10)) for s in result.scored)


def test_each_mask_is_scored_once_and_seeds_first():
    calls = []

    def objective(mask):
        calls.append(mask)
        return float(sum(mask))

    result = search_masks(objective, range(6), 2, seeds=[(4, 5)], random_count=30, generations=3, children=5, seed=1)
    assert len(calls) == len(set(calls)) == result.evaluations <= 15  # C(6, 2) = 15 masks exist
    assert calls[0] == (4, 5) and result.best.mask == (0, 1)


def test_a_mask_larger_than_the_pool_is_refused():
    with pytest.raises(ValueError, match="cannot skip 5 layers out of a pool of 3"):
        search_masks(lambda m: 0.0, range(3), 5)


def test_margin_violation():
    logits = torch.tensor([[5.0, 1.0, 0.0], [1.0, 1.5, 0.0], [0.0, 3.0, 0.0]])
    targets = torch.tensor([0, 0, 1])
    # margins: 4 (no violation), -0.5 (wrong: 1.5 + 0.5 = 2.0), 3 (none): mean 2/3
    assert margin_violation(logits, targets, margin=1.5) == pytest.approx(2.0 / 3)
    assert margin_violation(logits, targets, margin=0.0) == pytest.approx(0.5 / 3)
