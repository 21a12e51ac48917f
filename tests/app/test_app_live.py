"""The live cockpit without a browser: the effect line, the exact predictions and re-route rules. Each checks the
app's words against the engine's own re-route."""

from __future__ import annotations

import pytest

from app.settings import Settings

pytestmark = [pytest.mark.embedded]

OPENING = Settings(max_new_tokens=40)


def test_the_effect_line_names_the_notches_that_reproduce_the_run() -> None:
    """On the opening preset most tokens are free verdicts and copies score a few fixed values, so τ_accept can move
    a notch either way and give the same run: the line says which notches, for the run on screen and its settings,
    and a replay at every one of them is indeed that run (the engine's own rule)."""
    from app.session import SESSIONS
    from app.views.sensitivity import NOTCHES, effect_line, reproducing
    from core import generate

    bundle = SESSIONS.default_bundle()
    opening = OPENING
    trace = generate(bundle, opening.prompt, opening.config())
    lo, hi = reproducing(trace, "tau_accept")
    line = effect_line(trace)
    assert lo < opening.tau_accept < hi and "**The run on screen (τ_accept 0.9, τ_slim off):**" in line
    shown = [(t.token_id, t.tier, t.outcome, t.reason) for t in trace.tokens]
    for notch in (v for v in NOTCHES if lo <= v <= hi):
        again = generate(bundle, opening.prompt, opening.with_(tau_accept=notch).config())
        assert [(t.token_id, t.tier, t.outcome, t.reason) for t in again.tokens] == shown, f"τ_accept {notch:.2f}"


def test_the_prediction_line_is_the_engines_own_re_route_wherever_it_claims_to_be() -> None:
    from app import streaming
    from app.prefetch import PREFETCHER, tier_shares
    from app.session import SESSIONS
    from core import generate

    bundle = SESSIONS.default_bundle()
    final = streaming.drain(streaming.run(OPENING, "live-test", replay=True))
    PREFETCHER.wait(timeout=20)  # some of the run's grid, nearest first
    PREFETCHER.stop()
    trace, reliability = final["trace"], final["reliability"]
    assert "exactly the run on screen" in final["prediction"]
    computed = [(t.config.tau_accept, t.config.tau_slim) for t in PREFETCHER.grid.traces.values()
                if t.config.gamma == OPENING.gamma]
    assert len(computed) > 1
    for tau_accept, tau_slim in [*computed, (0.75, 1.0), (0.05, 0.05)]:
        line = streaming.prediction(trace, reliability, tau_accept, tau_slim)
        if line.startswith("Rough estimate"):
            continue
        actual = tier_shares(generate(bundle, OPENING.prompt, OPENING.with_(tau_accept=tau_accept,
                                                                              tau_slim=tau_slim).config()))
        shown = f"tier 1 {actual[1]:.0%} · tier 2 {actual[2]:.0%} · tier 3 {actual[3]:.0%}"
        assert shown in line, (tau_accept, tau_slim, line)


def test_a_threshold_released_after_a_new_prompt_asks_for_run_instead_of_generating() -> None:
    from app.streaming import reroute_refusal
    from core import Trace

    shown = Trace(prompt=OPENING.prompt, prompt_token_count=1, config=OPENING.config().to_dict(), models={})
    assert reroute_refusal(OPENING.with_(tau_accept=0.5), shown) is None  # a threshold alone: re-route
    assert reroute_refusal(OPENING.with_(gamma=4), shown) is None
    assert "press **Run**" in reroute_refusal(OPENING.with_(prompt="Something new"), shown)
    assert "press **Run**" in reroute_refusal(OPENING.with_(max_new_tokens=12), shown)
    assert reroute_refusal(OPENING.with_(temperature=0.3), shown) is None  # greedy: temperature unused
    assert reroute_refusal(OPENING, None) is None  # nothing on screen: a re-route is a run


def test_a_threshold_released_while_one_s_own_run_goes_on_waits_for_that_run_to_end() -> None:
    """A re-route no longer waits in the model queue, so one released while the visitor's own run is still going
    (its text says Done while fidelity is measured) would re-route the run before it between two of its rounds:
    it waits for that run to end instead, leaving the run's status line alone."""
    import gradio as gr

    from app.session import SESSIONS
    from app.tabs import generate

    with SESSIONS.job("own-run"):
        waiting = generate._after_own_run("own-run")
        assert next(waiting) == {"status": gr.skip()}
    assert list(waiting) == []  # the run ended: the re-route goes on
    assert list(generate._after_own_run("someone-else")) == []
