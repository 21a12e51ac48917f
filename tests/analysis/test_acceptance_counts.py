"""Serving counters (core.analysis.metrics.AcceptanceCounts), counted as vLLM counts them: per-position counts sum to
the accepted drafts, the mean acceptance length is summarize()'s and 1 + the per-position rates, pooling adds counts,
and tier-1 tokens (no verifier ran) count as accepted but are told apart by tier."""

import pytest

from core import generate, summarize
from core.analysis.metrics import AcceptanceCounts, acceptance_counts
from core.config import DecodeConfig

PROMPTS = ["hello there, how are you", "abc abc abc abc"]


@pytest.fixture(scope="module")
def bundle():
    from tiny import tiny_bundle

    return tiny_bundle(layers=6, middle_scale=0.1)


@pytest.mark.parametrize("config", [
    DecodeConfig(mode="sd", gamma=4, draft_route="skip-middle-50", max_new_tokens=24),
    DecodeConfig(gamma=4, tau_accept=0.3, tau_slim=0.3, draft_route="skip-middle-50", slim_route="skip-middle-25",
                 max_new_tokens=24),
    DecodeConfig(drafter="ngram", gamma=3, tau_accept=0.5, tau_slim=1.0, max_new_tokens=24),
])
def test_counts_agree_with_the_run_metrics(bundle, config):
    for prompt in PROMPTS:
        trace = generate(bundle, prompt, config)
        counts, summary = acceptance_counts(trace), summarize(trace)
        assert counts.drafted == summary["drafted"] and counts.accepted == summary["accepted"]
        assert sum(counts.accepted_per_pos) == counts.accepted
        assert counts.mean_acceptance_length == pytest.approx(summary["mean_acceptance_length"])
        assert counts.mean_acceptance_length == pytest.approx(1 + sum(counts.acceptance_by_position))
        assert counts.draft_acceptance_rate == pytest.approx(1 - summary["rejection_rate"])
        # a draft is kept up to its first refused token: position i+1 is never kept more often than position i
        assert all(a >= b for a, b in zip(counts.accepted_per_pos, counts.accepted_per_pos[1:], strict=False))
        by_tier = [sum(col) for col in zip(*counts.by_tier_per_pos.values(), strict=True)]
        assert by_tier == counts.accepted_per_pos
        assert 0 < counts.drafts_per_round <= 1 or counts.drafts == 0
        if config.mode == "sd":
            assert not any(counts.by_tier_per_pos[1]) and not any(counts.by_tier_per_pos[2])


def test_tier_one_tokens_count_as_accepted_and_are_told_apart(bundle):
    config = DecodeConfig(gamma=4, tau_accept=0.0, tau_slim=1.0, draft_route="skip-middle-50", max_new_tokens=16)
    counts = acceptance_counts(generate(bundle, PROMPTS[0], config))
    assert counts.accepted == counts.drafted and counts.by_tier_per_pos[1] == counts.accepted_per_pos


def test_pooling_adds_counts_and_pads_shorter_drafts(bundle):
    long = acceptance_counts(generate(bundle, PROMPTS[0], DecodeConfig(mode="sd", gamma=5, max_new_tokens=16,
                                                                     draft_route="skip-middle-50")))
    short = acceptance_counts(generate(bundle, PROMPTS[1], DecodeConfig(mode="sd", gamma=2, max_new_tokens=16,
                                                                      draft_route="skip-middle-50")))
    pooled = long + short
    assert pooled.drafts == long.drafts + short.drafts and pooled.accepted == long.accepted + short.accepted
    assert len(pooled.accepted_per_pos) == 5
    assert pooled.accepted_per_pos[:2] == [a + b for a, b in zip(long.accepted_per_pos, short.accepted_per_pos,
                                                                  strict=False)]
    assert pooled.accepted_per_pos[2:] == long.accepted_per_pos[2:]
    assert (AcceptanceCounts() + long).to_dict() == long.to_dict()
    assert AcceptanceCounts().mean_acceptance_length == 1.0 and AcceptanceCounts().acceptance_by_position == []
