"""The opening screen and the notch in the browser: a recorded sweep, drawn with no model and no round trip.

In headless Chromium at 1366x900 the app opens on the recorded Qwen2.5-Coder pair sweep. What the page script
(app/static/viasd.js) draws for a point must be what the server draws for that point's trace, to the byte:
text, headline, legend and the why sentence, for points across the grid. A far τ_accept move (0.90 -> 0.50)
changes the speed-up by at least 0.3x and words differing by at least 5 points. Sliders never refuse: τ_slim
follows τ_accept down and back up; γ between grid values snaps to the nearest, and says so; a value outside
the grid shows ghost numbers and, released, asks for a live run instead of loading the pair.
"""

from __future__ import annotations

import re
import time

import pytest
from app_fixtures import app_url_fixture, browser_fixture  # noqa: F401  (fixtures)

from app import live_load, recorded, streaming
from app.views import cards, render
from app.views.insight import why_html
from core.analysis.metrics import summarize
from core.models.loading import default_drafter_quant
from core.sweeps.grid import Point

pytestmark = [pytest.mark.browser]
VIEWPORT = {"width": 1366, "height": 900}


@pytest.fixture(scope="module")
def opening():
    grid = recorded.load(recorded.OPENING)
    assert grid is not None, recorded.PROBLEMS
    return grid


@pytest.fixture()
def page(browser, app_url: str):
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.goto(app_url, wait_until="domcontentloaded")
    pg.wait_for_function("() => window.viasd && window.viasd.grid && document.querySelector('#viasd-tokens .tok')",
                         timeout=60_000)
    yield pg
    context.close()


def _headline(page) -> list[str]:
    return page.eval_on_selector_all("#viasd-headline .value", "els => els.map(e => e.innerText)")


def _slider(page, elem_id: str) -> float:
    return float(page.input_value(f"#{elem_id} input[type=range]"))


def _type(page, elem_id: str, value: float) -> None:
    """Type a value into a slider's number box (an input event per keystroke), then leave it (a release)."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Tab")


def _wait_notch(page, text: str) -> str:
    """Wait until the notch line (drawn by the page, no round trip) says `text`; the line."""
    page.wait_for_function("t => (document.querySelector('#viasd-notch')?.innerText || '').includes(t)", arg=text,
                           timeout=30_000)
    return page.inner_text("#viasd-notch")


def _wait_slider(page, elem_id: str, value: float) -> None:
    """Wait until a slider stands at `value` (it may follow another slider or the picker a frame later)."""
    page.wait_for_function("([id, v]) => Math.abs(Number(document.querySelector(`#${id} input[type=range]`)?.value)"
                           " - v) < 1e-6", arg=[elem_id, value], timeout=30_000)


def _wait_rerouted(page, tau_accept: float) -> None:
    """Wait for the server's answer to the release at `tau_accept` (its status line names the thresholds)."""
    page.wait_for_function("a => new RegExp(`^Re-routed.* to τ ${a} /`).test(document.querySelector('#viasd-status')"
                           ".innerText)", arg=f"{tau_accept:g}", timeout=30_000)


def test_the_app_opens_on_the_recorded_pair_sweep(page, opening) -> None:
    status = page.inner_text("#viasd-status")
    assert status.startswith("Recorded run") and "no model loaded" in status
    line = page.inner_text("#viasd-notch")
    meta = opening.recorded
    assert meta["recorded"] in line and "qwen2.5-coder-1.5b-instruct verifying" in line
    from app.views.recording_line import live_change

    assert meta["dtype"] in line and live_change(meta) in line  # "nothing else" only where the precision matches

    assert f"all {opening.total} points" in line
    assert page.locator("#viasd-notch .viasd-kind-line").inner_text().startswith("The paper's VIA-SD")
    assert page.locator("#viasd-tradeoff svg path.speed").count() == 1
    page.click("#viasd-models > button, #viasd-models .label-wrap")  # the Models panel names the recorded pair
    assert page.input_value("#viasd-verifier textarea, #viasd-verifier input") == meta["load"]["verifier"]
    # and, by name, the drafter setting "Run it live" loads: the recording's (the 0.5B's own weights) where this CPU
    # keeps the recording's precision, else this CPU's recommended one (app.recorded.models_named)
    setting = live_load.wanted(*recorded.models_named(meta))[2]
    names = recorded.models_named(meta)[:2]
    assert setting == ("none" if recorded.precision_kept(meta) else default_drafter_quant(*names))
    assert page.input_value("#viasd-drafter-quant input").startswith(setting)


def test_the_page_draws_a_point_exactly_as_the_server_does(page, opening) -> None:
    keys = list(opening.traces)
    for key in (keys[0], keys[1], keys[len(keys) // 2], keys[-1]):
        trace = opening.traces[key]
        drawn = page.evaluate("(k) => { const v = window.viasd, p = v.grid.points[k]; return [v.tokensHtml(p), "
                              "v.headlineHtml(p), v.legendHtml(p), p.why]; }", key)
        assert drawn[0] == render.tokens_html(trace), key
        assert drawn[1] == cards.headline_html(summarize(trace), trace, recorded=True), key  # "measured recorded"
        assert drawn[2] == render.legend_html(trace), key
        assert drawn[3] == why_html(trace), key


def test_a_far_move_trades_speed_for_fidelity_with_no_server_call(page, opening) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    _type(page, "viasd-tau-accept", 0.9)
    _wait_notch(page, "τ_accept 0.90")
    _wait_rerouted(page, 0.9)  # the server answered that release: its request is out before the count starts
    before = _headline(page)
    requests.clear()
    box = page.locator("#viasd-tau-accept input[type=number]")
    box.fill("0.5")  # an input event: the page draws the point; no release yet, so no request either
    page.wait_for_function("() => document.querySelector('#viasd-notch').innerText.includes('τ_accept 0.50')")
    after = _headline(page)
    assert not [r for r in requests if "/queue/join" in r or "/run/" in r], requests
    speed = [float(v.split("×")[0]) for v in (before[0], after[0])]
    words = [int(v.rstrip("%")) for v in (before[2], after[2])]
    assert speed[1] - speed[0] >= 0.3 and words[1] - words[0] >= 5, (before, after)
    expected = opening.traces[Point(0.5, 1.0, opening.config.gamma).key]
    assert page.inner_html("#viasd-tokens-box") .count('class="tok') == len(expected.tokens)
    box.press("Tab")  # the release: the server re-route fills the cards and charts, no model loaded
    page.wait_for_function("() => /^Re-routed/.test(document.querySelector('#viasd-status').innerText)",
                           timeout=30_000)
    assert "recorded" in page.inner_text("#viasd-status")


REFRESH = """(key) => {
  const g = window.viasd.grid, points = JSON.parse(JSON.stringify(g.points));
  points[key].v[2] = '99%';  // the grid again with one number changed, as after the plain reference lands
  window.viasd.load(JSON.stringify({...g, points, kind: 'refresh'}));
  window.viasd.load(JSON.stringify({...g, id: 'another run', points, kind: 'refresh'}));  // not this page's grid
}"""


def test_a_refreshed_grid_redraws_the_point_the_visitor_chose(page, opening) -> None:
    """After the plain reference lands (reduced precision) the poll sends the grid again (kind "refresh"): the page
    keeps the point the visitor moved to and redraws its numbers; a refresh of another run's grid is ignored."""
    _type(page, "viasd-tau-accept", 0.5)
    _wait_notch(page, "τ_accept 0.50")
    _wait_rerouted(page, 0.5)  # the server's answer to the release is in: nothing draws over the refresh after it
    key = Point(0.5, 1.0, opening.config.gamma).key
    page.evaluate(REFRESH, key)
    page.wait_for_function("() => document.querySelectorAll('#viasd-headline .value')[2].innerText === '99%'",
                           timeout=10_000)
    assert _slider(page, "viasd-tau-accept") == 0.5 and "τ_accept 0.50" in page.inner_text("#viasd-notch")
    assert page.evaluate("() => window.viasd.grid.id") == opening.id


WATCH_SPEED = """() => {
  const seen = window.__speeds = [];
  const box = document.querySelector('#viasd-headline-box');
  const speed = () => box.querySelector('.value')?.innerText;
  let last = speed();
  new MutationObserver(() => { const now = speed(); if (now !== last) { last = now; seen.push(now); } })
    .observe(box, {subtree: true, childList: true, characterData: true});
}"""


def test_quick_notches_are_each_drawn_once_and_no_late_answer_draws_over_them(page, monkeypatch) -> None:
    """A slow server (its answer to a release lands after the next notch) must not draw an older point over
    the page's newer one: the page draws each notch once, and the answers carry only the cards and charts. Keys
    pressed in a burst send one release once they rest, not one each (each answer redraws the charts)."""
    computed, answered = streaming.computed_update, []

    def slow(*args, **kwargs):
        time.sleep(0.4)
        answered.append(time.monotonic())
        return computed(*args, **kwargs)

    monkeypatch.setattr(streaming, "computed_update", slow)
    _type(page, "viasd-tau-accept", 0.9)
    page.wait_for_function("() => /^Re-routed/.test(document.querySelector('#viasd-status').innerText)",
                           timeout=30_000)
    page.wait_for_timeout(1000)
    at_90 = _headline(page)[0]
    page.evaluate(WATCH_SPEED)
    page.focus("#viasd-tau-accept input[type=range]")
    answered.clear()
    for i in range(8):  # two bursts; the answer to the first's release lands during the second
        page.keyboard.press("ArrowLeft" if i % 2 == 0 else "ArrowRight")
        page.wait_for_timeout(600 if i == 3 else 150 if i > 3 else 60)
    deadline = time.monotonic() + 30
    while len(answered) < 2 and time.monotonic() < deadline:  # both bursts' answers computed
        page.wait_for_timeout(50)
    page.wait_for_function("n => window.__speeds.length >= n", arg=8, timeout=30_000)  # every notch drawn
    page.wait_for_timeout(1000)  # an absence: a third re-route, or a late answer drawing over a notch, would show
    seen = page.evaluate("() => window.__speeds")
    at_85 = seen[0]
    assert at_85 != at_90 and seen == [at_85, at_90] * 4, seen
    assert len(answered) == 2, f"{len(answered)} server re-routes for two bursts of keys (one each, once they rest)"
    assert _headline(page)[0] == at_90 and _slider(page, "viasd-tau-accept") == pytest.approx(0.9)


def test_tau_slim_follows_tau_accept_down_and_back_up(page) -> None:
    _type(page, "viasd-tau-slim", 0.6)  # snaps to the calibrated 0.575
    _wait_notch(page, "τ_slim 0.575")
    _type(page, "viasd-tau-accept", 0.4)
    _wait_slider(page, "viasd-tau-slim", 0.4)
    _type(page, "viasd-tau-accept", 0.85)
    _wait_slider(page, "viasd-tau-slim", 0.6)
    _wait_notch(page, "τ_accept 0.85")
    _wait_rerouted(page, 0.85)  # the server's answer to the last release is in: none of them warned
    assert "out of order" not in page.inner_text("body")


def test_gamma_between_grid_values_snaps_and_says_so(page, opening) -> None:
    _type(page, "viasd-gamma", 5)
    line = _wait_notch(page, "nearest to")
    assert re.search(r"γ 6 \(nearest to .*γ 5\)", line), line


def test_outside_the_grid_the_numbers_are_ghosts_and_no_model_loads(page) -> None:
    box = page.locator("#viasd-tau-accept input[type=number]")
    box.fill("0.1")
    page.wait_for_selector("#viasd-headline.ghost", timeout=30_000)
    assert page.locator("#viasd-headline.ghost").count() == 1
    assert "not in the grid" in page.inner_text("#viasd-notch")
    box.press("Tab")
    page.wait_for_function("() => document.querySelector('#viasd-status').innerText.includes('outside the recorded')",
                           timeout=30_000)
    assert "Run it live" in page.inner_text("#viasd-status")


def test_the_picker_sets_both_sliders(page) -> None:
    page.click("#viasd-picker-box button, #viasd-picker-box .label-wrap")
    cell = page.locator('#viasd-picker rect.cell[data-a="0.70"][data-s="0.40"]')
    cell.click()
    _wait_notch(page, "τ_accept 0.70 · τ_slim 0.40")
    _wait_slider(page, "viasd-tau-accept", 0.7)
    _wait_slider(page, "viasd-tau-slim", 0.4)


def test_the_page_snaps_as_the_grid_does(page, opening) -> None:
    values = [(a / 20, s / 20, g) for a in range(0, 21, 3) for s in range(0, 21, 4) for g in (1, 4, 5, 7, 8, 9)]
    snapped = page.evaluate("(vs) => vs.map(([a, s, g]) => { const q = window.viasd.snap(a, s, g); "
                            "return q ? `${q.a}|${q.s}|${q.g}` : null; })", values)
    expected = [(p.key if (p := opening.grid.snap(a, s, g)) else None) for a, s, g in values]
    assert snapped == expected
    assert any(k is None for k in expected) and len({k for k in expected if k}) > 10
