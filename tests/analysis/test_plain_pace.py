"""Plain decoding's pace on this machine and a run's measured speed-up beside its modelled one
(core.analysis.plain_pace). No timing is asserted: only what is recorded, for which runs, and the arithmetic."""

from __future__ import annotations

import dataclasses

import pytest
from tiny import tiny_bundle

from core import generate
from core.analysis.plain_pace import (
    Measured,
    Pace,
    PaceKey,
    PaceRecord,
    decode_pace,
    measured_speedup_here,
    probe,
    slower_because,
)
from core.config import DecodeConfig

PROMPT = "the cat sat on the mat. the cat sat on the"
VIA = DecodeConfig(mode="via", drafter="self", draft_route="skip-middle-50", slim_route="skip-middle-25",
                   tau_accept=0.2, tau_slim=0.1, gamma=4, max_new_tokens=16)


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle(avoid_eos=True)


def test_a_plain_run_that_ran_every_pass_sets_the_pace_and_a_replayed_one_does_not(bundle) -> None:
    record = PaceRecord()
    plain = DecodeConfig(mode="plain", max_new_tokens=8)
    ran = generate(bundle, PROMPT, plain, replay=False)
    pace = record.note(ran)
    assert pace is not None and pace.tokens == len(ran.tokens) - ran.rounds[0].emitted
    assert pace.seconds_per_token == pytest.approx((ran.wall_s - ran.rounds[0].wall_s) / pace.tokens)
    assert record.get(ran.models) == pace and ran.models["threads"] >= 1
    replayed = generate(bundle, PROMPT, plain, replay=True)  # the memo holds every pass of `ran`
    assert decode_pace(replayed) is None and PaceRecord().note(replayed) is None
    assert record.note(generate(bundle, PROMPT, VIA, replay=False)) is None  # only plain runs set plain's pace


def test_the_key_keeps_precision_and_threads_apart() -> None:
    models = {"verifier": "m", "dtype": "float32", "verifier_quant": "none", "device": "cpu", "threads": 2}
    record = PaceRecord()
    record.put(models, Pace(0.1, 8, "a plain run"))
    assert record.get({**models, "threads": 1}) is None and record.get({**models, "verifier_quant": "int8"}) is None
    assert record.get(dict(models)) is not None and PaceKey.of(models).threads == 2


def test_the_measured_speed_up_is_plains_seconds_per_token_over_the_runs(bundle) -> None:
    run = generate(bundle, PROMPT, VIA, replay=False)
    seconds, tokens = decode_pace(run)
    measured = measured_speedup_here(run, Pace(3 * seconds, 5, "a plain run"))
    assert measured.speedup == pytest.approx(3.0) and measured.run_s_per_token == pytest.approx(seconds)
    assert measured_speedup_here(run, None) is None
    assert measured_speedup_here(generate(bundle, PROMPT, VIA, replay=True), Pace(1.0, 5, "x")) is None
    roles = {p.role for p in measured.passes}
    assert "drafter" in roles and all(p.here > 0 and p.modelled > 0 for p in measured.passes)


def test_a_probe_times_a_few_plain_passes_on_the_runs_prompt(bundle) -> None:
    record = PaceRecord()
    run = generate(bundle, PROMPT, VIA, replay=False)
    pace, cost = probe(bundle, run, tokens=3, record=record)
    assert pace is not None and pace.tokens == 3 and "3-token plain probe" in pace.source and cost > 0
    assert measured_speedup_here(run, record.get(run.models)) is not None


def test_why_names_the_verification_size_and_what_the_model_assumes(bundle) -> None:
    run = generate(bundle, PROMPT, VIA, replay=False)
    measured = measured_speedup_here(run, Pace(1e-9, 5, "a plain run"))  # plain far faster: every pass costs more
    assert measured.contradicts
    why = slower_because(run, measured)
    first = measured.passes[0]
    assert f"one-token passes here ({run.models['dtype']} on " in why and "the model assumes" in why
    assert f"{first.modelled:.1f}" in why
    calm = dataclasses.replace(measured, passes=())
    assert slower_because(run, calm) == "the run's passes cost more here than the model assumes"
    assert not Measured(1.2, 0.1, measured.pace, ()).contradicts


def test_the_cli_prints_the_measured_speed_up_from_a_probe_and_says_when_the_model_is_contradicted(
        bundle, monkeypatch) -> None:
    from core.analysis.metrics import summarize
    from core.analysis.plain_pace import PLAIN_PACES
    from core.tools.cli import measured_line

    PLAIN_PACES.clear()
    run = generate(bundle, PROMPT, VIA, replay=False)
    line = measured_line(bundle, run)  # no plain pace in this process yet: a probe times one
    assert line.startswith("measured speed-up vs plain: ") and "4-token plain probe on this prompt" in line
    assert "--mode all" in line
    PLAIN_PACES.put(run.models, Pace(1e-9, 5, "a plain run"))  # plain far faster than this run, by construction
    slow = measured_line(bundle, run)
    assert "measured speed-up vs plain: 0.00x" in slow
    assert ("slower than plain here: a " in slow) == (summarize(run)["modelled_speedup"] > 1.0)
    monkeypatch.setattr("core.tools.cli.summarize", lambda trace: {**summarize(trace), "modelled_speedup": 2.04})
    assert "modelled 2.04x but slower than plain here: a " in measured_line(bundle, run)
    PLAIN_PACES.clear()
