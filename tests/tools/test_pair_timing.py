"""Smoke test of the GPU timing script (core/tools/pair_timing.py) at tiny sizes on the CPU: it builds both
models, times every pass and round shape, and prints the table. No timing is asserted."""

from __future__ import annotations

import torch

from core.tools.pair_timing import PASS_TOKENS, SHAPES, build, run, table


def test_tiny_models_have_the_requested_shape() -> None:
    model = build(SHAPES["tiny"]["verifier"], SHAPES["tiny"]["vocab"], torch.device("cpu"), torch.float32)
    assert model.config.num_hidden_layers == 4 and model.lm_head.weight.shape == (512, 64)
    assert SHAPES["pair"]["verifier"][:2] == (28, 1536) and SHAPES["pair"]["drafter"][:2] == (24, 896)
    assert SHAPES["pair"]["vocab"] == 151936


def test_every_pass_and_round_is_timed_and_printed() -> None:
    header, timings = run("tiny", "cpu", "float32", context=8, gamma=2, repeats=1)
    assert "float32 on cpu" in header and "tiny shapes" in header
    passes = [t for t in timings if t.what.endswith("pass")]
    assert len(passes) == 2 * len(PASS_TOKENS)
    rounds = {t.what: t for t in timings if not t.what.endswith("pass")}
    assert set(rounds) == {"plain token", "classic SD round", "VIA-SD round, tier 1 only", "VIA-SD round, tiers 1+2",
                           "VIA-SD round, tiers 1+2+3"}
    assert rounds["classic SD round"].tokens == 3 and rounds["VIA-SD round, tier 1 only"].tokens == 2
    assert all(t.ms > 0 for t in timings)
    printed = table(timings)
    assert "classic SD round" in printed and "x 1-token" in printed


def test_quantised_drafters_are_timed_too_and_a_missing_kernel_is_named(monkeypatch) -> None:
    from core.models import drafter_quant

    header, timings = run("tiny", "cpu", "float32", context=8, gamma=2, repeats=1,
                          drafter_quants=("int8", "int4+vocab"))
    names = {t.what for t in timings}
    assert {"drafter [int8] pass", "drafter [int4+vocab] pass", "classic SD round [int8]"} <= names
    assert "VIA-SD round, tier 1 only [int4+vocab]" in names
    monkeypatch.setattr(drafter_quant, "kernel_error", lambda bits, device, dtype: "no kernel" if bits == 4 else None)
    header, timings = run("tiny", "cpu", "float32", context=8, gamma=2, repeats=1, drafter_quants=("int4",))
    assert "drafter int4: skipped, int4 weights: no kernel" in header
    assert not any("[int4]" in t.what for t in timings)
