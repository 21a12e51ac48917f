"""Fidelity in bf16: what numerics change (classic SD's own drift from plain greedy) apart from what tiers change."""

from __future__ import annotations

import json

import pytest

from core.analysis.fidelity import numerics_split, separate_numerics
from core.trace import Fidelity, Trace


def run(words: float | None, dtype: str = "bfloat16") -> Trace:
    trace = Trace(prompt="p", prompt_token_count=1, config={}, models={"dtype": dtype})
    if words is not None:
        trace.fidelity = Fidelity(reference_tokens=10, common_prefix=0, identical=words == 0, full_agreement=1.0,
                                  full_nll=0.1, words_differing=words)
    return trace


def test_classic_sd_drift_is_numerics_and_the_rest_is_tiers() -> None:
    traces = {"plain": run(0.0), "sd": run(0.04), "via": run(0.10)}
    assert separate_numerics(traces) == pytest.approx(0.04)
    via, sd = traces["via"].fidelity, traces["sd"].fidelity
    assert via.numerics_words == pytest.approx(0.04) and via.tiers_words == pytest.approx(0.06)
    assert sd.tiers_words == 0.0, "classic SD's whole difference is numerics by definition"
    assert traces["plain"].fidelity.numerics_words is None, "the reference itself is not split"
    assert numerics_split(traces["via"]) == "4% numerics (classic SD in bfloat16) + 6% tiers"


def test_a_run_closer_than_classic_sd_has_no_negative_tier_share() -> None:
    traces = {"sd": run(0.08), "via": run(0.05)}
    separate_numerics(traces)
    assert traces["via"].fidelity.tiers_words == 0.0


def test_in_fp32_numerics_are_zero_and_everything_is_tiers() -> None:
    traces = {"plain": run(0.0, "float32"), "sd": run(0.0, "float32"), "via": run(0.12, "float32")}
    separate_numerics(traces)
    assert traces["via"].fidelity.numerics_words == 0.0 and traces["via"].fidelity.tiers_words == pytest.approx(0.12)


def test_not_separated_without_a_classic_sd_run_or_across_dtypes() -> None:
    assert separate_numerics({"via": run(0.1)}) is None and numerics_split(run(0.1)) is None
    traces = {"sd": run(0.02, "float32"), "via": run(0.1, "bfloat16")}
    separate_numerics(traces)
    assert traces["via"].fidelity.numerics_words is None, "another dtype's drift explains nothing here"
    assert separate_numerics({"sd": run(None), "via": run(0.1)}) is None


def test_the_split_survives_json() -> None:
    traces = {"sd": run(0.03), "via": run(0.07)}
    separate_numerics(traces)
    back = Trace.from_json(traces["via"].to_json())
    assert back.fidelity.numerics_words == pytest.approx(0.03) and back.fidelity.tiers_words == pytest.approx(0.04)
    assert "numerics_words" in json.loads(traces["via"].to_json())["fidelity"]
