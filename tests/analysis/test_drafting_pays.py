"""The recommended setting is fitted to the machine: the fastest draft length from measured pass costs, or plain
decoding where no draft length beats it. Costs are constructed (never timed) except in the one test that times
a tiny pair's passes to check the measurement's shape."""

from __future__ import annotations

import pytest
from tiny import tiny_bundle

from core.analysis.drafting_pays import PassCosts, fit, fit_to_machine, measure
from core.config import DecodeConfig

VIA = DecodeConfig(mode="via", drafter="model", gamma=6, tau_accept=0.8, tau_slim=1.0)


def costs(draft: float, per_token: float) -> PassCosts:
    """A verifier pass of k tokens costs 1 + per_token * (k - 1); a drafter token costs `draft`."""
    return PassCosts({k: 1.0 + per_token * (k - 1) for k in range(1, 12)}, draft)


def test_a_cheap_drafter_and_flat_verification_keep_drafting_and_the_speedup_follows_the_formula() -> None:
    c = costs(draft=0.1, per_token=0.02)
    chosen = fit(VIA, c, acceptance=0.8)
    assert chosen.config.mode == "via" and 1 <= chosen.config.gamma <= 6
    g = chosen.config.gamma
    tokens = (1 - 0.8 ** (g + 1)) / 0.2
    assert chosen.speedup == pytest.approx(tokens / (g * 0.1 + 1 + 0.02 * g))
    assert all(c.speedup(g, 0.8) >= c.speedup(other, 0.8) for other in range(1, 7))
    assert "expected" in chosen.note and "measured here" in chosen.note


def test_a_costly_drafter_on_a_compute_bound_verifier_falls_back_to_plain_and_says_so() -> None:
    """The pair's economics measured under AVX2 in float32 with the int4 drafter of bf16 machines: a drafter token
    1.14 of a verifier pass (int4 weights in float32), an 8-token verification 1.9 one-token passes."""
    chosen = fit(VIA, costs(draft=1.14, per_token=0.13), acceptance=0.8)
    assert chosen.config.mode == "plain" and chosen.speedup == 1.0
    assert "does not pay" in chosen.note and "decoding plainly" in chosen.note


def test_a_costlier_drafter_shortens_the_draft() -> None:
    cheap, dear = fit(VIA, costs(0.05, 0.01), 0.9), fit(VIA, costs(0.4, 0.01), 0.9)
    assert dear.config.mode == "via" and dear.config.gamma < cheap.config.gamma


def test_settings_without_a_model_drafter_are_left_alone() -> None:
    for config in (DecodeConfig(mode="plain"), DecodeConfig(mode="via", drafter="ngram")):
        assert fit(config, costs(0.9, 1.0)).config == config


def test_measure_times_every_pass_size_a_fit_needs_on_a_real_pair() -> None:
    bundle = tiny_bundle(drafter_layers=2)
    measured = measure(bundle, range(1, 4), repeats=1)
    assert set(measured.verify) == {1, 2, 3, 4} and measured.draft_token > 0
    assert fit_to_machine(bundle, VIA.with_(gamma=3)).config.mode in ("via", "plain")
