"""The headline never contradicts the clock: beside the modelled speed-up, the measured one where every pass of the
run ran here and plain's pace here is known, "replayed" where the memo answered, and a modelled gain above 1x with
a measured speed-up below it said in the headline's own line, with why (issue 43, item 6). Numbers are constructed,
never timed."""

from __future__ import annotations

import re

import pytest
from tiny import tiny_bundle

from app.views import cards
from core import generate, summarize
from core.analysis.plain_pace import PLAIN_PACES, Measured, Pace, PassCost, decode_pace
from core.config import DecodeConfig

PROMPT = "the cat sat on the mat. the cat sat on the"
VIA = DecodeConfig(mode="via", drafter="self", draft_route="skip-middle-50", slim_route="skip-middle-25",
                   tau_accept=0.2, tau_slim=0.1, gamma=4, max_new_tokens=16)


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle(avoid_eos=True)


@pytest.fixture()
def paces():
    PLAIN_PACES.clear()
    yield PLAIN_PACES
    PLAIN_PACES.clear()


def _tag(headline: str) -> str:
    found = re.search(r'<span class="here"[^>]*>(.*?)</span>', headline)
    return found.group(1).replace("<br>", " ") if found else ""


def test_the_measured_speed_up_stands_beside_the_modelled_one_when_plains_pace_is_known(bundle, paces) -> None:
    run = generate(bundle, PROMPT, VIA, replay=False)
    assert _tag(cards.headline_html(summarize(run), run, measured=cards.measured_here(run))) == "measured …"
    seconds, _ = decode_pace(run)
    paces.put(run.models, Pace(seconds / 2, 8, "a plain run"))  # plain twice as fast as this run, by construction
    headline = cards.headline_html(summarize(run), run, measured=cards.measured_here(run))
    assert _tag(headline) == "measured 0.50×" and 'data-metric="measured_speedup"' in headline
    assert headline.index('data-metric="modelled_speedup"') < headline.index('data-metric="measured_speedup"')


def test_replayed_and_recorded_runs_say_why_no_measured_speed_up_stands_there(bundle, paces) -> None:
    generate(bundle, PROMPT, VIA, replay=False)
    replayed = generate(bundle, PROMPT, VIA, replay=True)  # every pass from the memo
    paces.put(replayed.models, Pace(0.01, 8, "a plain run"))
    assert cards.measured_here(replayed) is None
    headline = cards.headline_html(summarize(replayed), replayed, measured=cards.measured_here(replayed))
    assert _tag(headline) == "measured replayed" and "measured_speedup" not in headline
    assert "no pass ran here" in headline and "⚠" not in headline
    recorded = cards.headline_html(summarize(replayed), replayed, recorded=True)
    assert _tag(recorded) == "measured recorded"
    assert cards.headline_html({}).count('class="here"') == 0  # no run yet: nothing beside "—"


def _measured(speedup: float) -> Measured:
    passes = (PassCost("full", 5, 2.7, 1.0), PassCost("drafter", 1, 0.35, 0.27))
    return Measured(speedup, 0.3, Pace(0.1, 8, "a plain run"), passes)


def test_a_modelled_gain_the_clock_contradicts_is_said_in_the_same_line_with_why(bundle) -> None:
    run = generate(bundle, PROMPT, VIA, replay=False)
    metrics = {**summarize(run), "modelled_speedup": 2.04}
    headline = cards.headline_html(metrics, run, measured=_measured(0.31))
    row = re.search(r'<div class="partial" title="([^"]*)">([^<]*)</div>', headline)
    assert row.group(1) == row.group(2)  # one line, the whole sentence in its tooltip
    said = row.group(2)
    assert said.startswith("⚠ Slower than plain here (0.31×), though modelled 2.04× on an accelerator: ")
    assert "a 5-token verification costs 2.7 one-token passes here" in said and "the model assumes 1.0" in said
    assert _tag(headline) == "measured 0.31×"
    for quiet in (cards.headline_html(metrics, run, measured=_measured(1.3)),  # the clock agrees: a gain
                  cards.headline_html({**metrics, "modelled_speedup": 0.8}, run, measured=_measured(0.31)),
                  cards.headline_html(metrics, run, progress="Running…", measured=_measured(0.31))):
        assert "⚠" not in quiet
