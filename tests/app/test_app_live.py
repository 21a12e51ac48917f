"""The live cockpit without a browser: the effect line, the exact predictions and re-route rules (issue 15
items 1 and 2). Each checks the app's words against the engine's own re-route."""

from __future__ import annotations

import pytest

from app.settings import Settings

pytestmark = [pytest.mark.embedded]

OPENING = Settings(max_new_tokens=40)


def test_the_effect_line_names_the_threshold_gap_that_reproduces_the_run() -> None:
    """The opening preset's copies score 1.0 or 0.67 and most tokens are free verdicts: τ_accept from 0.70 to
    0.95 gives the same run, and a replay at each of those notches is indeed that run (the engine's own rule)."""
    from app.session import SESSIONS
    from app.views.sensitivity import effect_line, tau_accept_gap
    from core import generate

    bundle = SESSIONS.default_bundle()
    opening = OPENING
    trace = generate(bundle, opening.prompt, opening.config())
    gap = tau_accept_gap(trace, opening.tau_accept)
    assert gap.covers_neighbours(opening.tau_accept) and "Why the sliders change nothing" in effect_line(trace)
    shown = [(t.token_id, t.tier, t.outcome) for t in trace.tokens]
    for notch in range(round(gap.lo / 0.05) + 1, round(gap.hi / 0.05) + 1):
        again = generate(bundle, opening.prompt, opening.with_(tau_accept=round(notch * 0.05, 2)).config())
        assert [(t.token_id, t.tier, t.outcome) for t in again.tokens] == shown, f"τ_accept {notch * 0.05:.2f}"


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
