"""Faults a public demo meets: cancelled runs, failed model loads, runs out of time.

A cancelled run must leave the bundle's caches and memo consistent (the next run equals a fresh
bundle's); a failed model load must leave the visitor's previous model in use; a run past its time
budget must return its partial trace, marked partial. Tiny random models: no download, seconds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tiny import save_tiny_pair, tiny_bundle

import core.decoding.engine as engine
from core import DecodeConfig, generate, iter_generate
from core.errors import ModelLoadError, ModelPolicyError

PROMPT = "the cat sat on the mat and the dog sat on the log"
VIA = DecodeConfig(mode="via", drafter="self", gamma=4, tau_accept=0.3, tau_slim=0.1, draft_route="skip-middle-50",
                   slim_route="skip-middle-25", max_new_tokens=24, chat_template=False)


def outcome_list(trace: object) -> list[tuple[int, str]]:
    return [(t.token_id, t.outcome) for t in trace.tokens]


@pytest.mark.parametrize("how, replay", [("closed", True), ("should_stop", False)])
def test_a_cancelled_run_leaves_caches_consistent(how: str, replay: bool) -> None:
    bundle = tiny_bundle("llama", layers=6)
    rounds = 0
    stream = iter_generate(bundle, PROMPT, VIA, replay=replay, should_stop=lambda: rounds >= 2)
    for trace in stream:  # Gradio closes a cancelled generator; the app's Stop sets a flag
        partial, rounds = trace, rounds + 1
        if how == "closed" and rounds == 2:
            stream.close()
            break
    assert 0 < len(partial.tokens) < VIA.max_new_tokens
    assert how == "closed" or (partial.partial and partial.stop_reason == "cancelled")

    fresh = tiny_bundle("llama", layers=6)  # same seeds: the same weights, untouched caches and memo
    for prompt, config in ((PROMPT, VIA), (PROMPT, VIA.with_(tau_accept=0.6, tau_slim=0.2))):
        expected = generate(fresh, prompt, config, replay=False)
        assert outcome_list(generate(bundle, prompt, config, replay=True)) == outcome_list(expected)
        assert outcome_list(generate(bundle, prompt, config, replay=False)) == outcome_list(expected)
    routed = generate(fresh, PROMPT, VIA, replay=False)
    assert any(t.outcome == "direct-accepted" for t in routed.tokens), "tier 1 never fired: weak test"
    assert any(t.outcome in ("slim-regenerated", "full-corrected") for t in routed.tokens), "no rejection: weak test"


class FakeClock:
    """`time` for core.decoding.engine with a monotonic clock that advances one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_a_run_past_its_time_budget_returns_its_partial_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tiny_bundle("llama", layers=6)
    full = generate(bundle, PROMPT, VIA, replay=False)
    monkeypatch.setattr(engine, "time", FakeClock())
    # started at t=1; the checks at t=2 and t=3 are within 2.5 s of it, the one at t=4 is not: two rounds run.
    cut = generate(bundle, PROMPT, VIA, replay=False, time_budget_s=2.5)
    assert cut.partial and cut.stop_reason == "time-budget"
    assert len(cut.rounds) == 2 and 0 < len(cut.tokens) < len(full.tokens)
    assert outcome_list(cut) == outcome_list(full)[:len(cut.tokens)]  # a true prefix of the finished run
    assert generate(bundle, PROMPT, VIA, replay=False, time_budget_s=10**6).partial is False


def test_no_budget_and_a_roomy_budget_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tiny_bundle("llama", layers=6)
    monkeypatch.setattr(engine, "time", FakeClock())
    finished = generate(bundle, PROMPT, VIA.with_(max_new_tokens=8), replay=False)
    assert not finished.partial and finished.stop_reason in ("max_new_tokens", "eos")


# --- a failed model load leaves the previous model in use ------------------------------------------------


@pytest.fixture(scope="module")
def local_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    verifier, drafter = save_tiny_pair(tmp_path_factory.mktemp("models"))
    return str(verifier), str(drafter)


def test_a_failed_load_leaves_the_previous_pair_in_use(local_pair: tuple[str, str], tmp_path: Path) -> None:
    from app.session import Sessions

    sessions = Sessions()  # its own visitor state, not the app's
    choose, bundle_of = sessions.choose, sessions.bundle
    visitor = "fault-test-visitor"
    verifier, drafter = local_pair
    chosen = choose(visitor, verifier, drafter)
    assert bundle_of(visitor) is chosen
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    (broken / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    for bad, error in (("no-such-owner/no-such-model", ModelLoadError), (str(broken), ModelLoadError),
                       ("x" * 10_000, ModelPolicyError), (verifier, ModelLoadError)):
        drafter_name = "" if bad != verifier else str(broken)
        with pytest.raises(error):
            choose(visitor, bad, drafter_name)
        assert bundle_of(visitor) is chosen, f"loading {bad[:40]!r} moved the visitor off their models"
    trace = generate(bundle_of(visitor), "the cat", DecodeConfig(mode="sd", drafter="model",
                                                                          max_new_tokens=4, chat_template=False))
    assert trace.tokens and trace.models["verifier"] == verifier
