"""The Classroom on a 1024x768 projector and settings opened from a shared link, in headless Chromium."""

from __future__ import annotations

import json
import re

import pytest
from app_fixtures import app_url_fixture, browser_fixture  # noqa: F401  (fixtures)
from test_app_browser import ARTIFACTS

from examples import load_walkthroughs

pytestmark = [pytest.mark.embedded, pytest.mark.browser]
PROJECTOR = {"width": 1024, "height": 768}


def _open(browser, url: str, viewport: dict):
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#viasd-run", timeout=60_000)
    return page


def _caption(page) -> str:
    return page.inner_text("#viasd-caption")


def test_projector_layout_hidden_future_and_a_free_verdict_caption(browser, app_url: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page = _open(browser, app_url, PROJECTOR)
    page.get_by_role("tab", name=re.compile("Classroom")).click()
    page.get_by_label("Presenter mode").check()
    page.wait_for_function("() => document.body.classList.contains('viasd-presenter')")
    page.locator("#viasd-walk-pick input").click()
    page.get_by_role("option", name=re.compile("Classic speculative decoding")).click()
    page.click("#viasd-walk")
    page.wait_for_function("() => (document.querySelector('#viasd-caption')?.innerText || '').includes('Round 1 of')",
                           timeout=300_000)

    # above the fold at 1024x768: both buttons, the round slider and the start of the text
    for selector in ("#viasd-prev", "#viasd-next", "#viasd-round-slider"):
        box = page.locator(selector).bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= PROJECTOR["height"], (selector, box)
    assert page.locator("#viasd-class-tokens").bounding_box()["y"] < PROJECTOR["height"] - 60
    size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('.viasd-caption')).fontSize)")
    assert size >= 21, f"caption is {size}px in presenter mode"
    page.screenshot(path=str(ARTIFACTS / "05_classroom_projector.png"))

    # later rounds are hidden until reached
    rounds = page.eval_on_selector_all("#viasd-class-tokens .tok", "els => els.map(e => +e.dataset.round)")
    assert rounds and set(rounds) == {0}

    # find a round whose caption explains a free verdict: it reads the recorded reason, not a confidence
    total = int(re.search(r"Round 1 of (\d+)", _caption(page)).group(1))
    for number in range(1, total + 1):
        if page.locator("#viasd-caption li[data-reason='free-verdict']").count():
            break
        page.click("#viasd-next")
        page.wait_for_function("(n) => (document.querySelector('#viasd-caption')?.innerText || '')"
                               ".includes(`Round ${n} of`)", arg=number + 1, timeout=60_000)
    free = page.locator("#viasd-caption li[data-reason='free-verdict']").first.inner_text()
    assert "already run" in free and " sure" not in free and "τ_" not in free
    page.screenshot(path=str(ARTIFACTS / "06_classroom_free_verdict.png"))

    # the teacher may show what comes next, faded
    page.get_by_label("Show later rounds").check()
    page.wait_for_function("() => document.querySelectorAll('#viasd-class-tokens .tok.faded').length > 0")
    page.get_by_label("Presenter mode").uncheck()
    page.wait_for_function("() => !document.body.classList.contains('viasd-presenter')")
    page.context.close()


def test_a_shared_link_opens_its_settings_and_offers_a_link_back(browser, app_url: str) -> None:
    query = "?prompt=Name+three+planets.&tau_accept=0.7&tau_slim=0.3&gamma=3&mode=via&tau_zzz=1"
    page = _open(browser, app_url + query, {"width": 1366, "height": 900})
    page.wait_for_function("() => document.querySelector('#viasd-prompt textarea')?.value === 'Name three planets.'",
                           timeout=30_000)
    assert page.input_value("#viasd-tau-accept input[type=number]") == "0.7"
    assert page.input_value("#viasd-tau-slim input[type=number]") == "0.3"
    assert page.input_value("#viasd-gamma input[type=number]") == "3"
    page.click("#viasd-share")
    page.wait_for_function("() => (document.querySelector('#viasd-share-link textarea, #viasd-share-link input')"
                           "?.value || '').startsWith('http')", timeout=30_000)
    link = page.input_value("#viasd-share-link textarea, #viasd-share-link input")
    assert link.startswith(app_url) and "tau_accept=0.7" in link and "prompt=Name+three+planets." in link
    assert "run=1" in link
    page.context.close()


FOLD = ("#viasd-walk", "#viasd-walk-pick", "#viasd-prev", "#viasd-next", "#viasd-round-slider",
        "#viasd-class-tokens", "#viasd-caption", "#viasd-round")
"""What a class must see without scrolling: the controls, the text, the caption and the round's table."""
KEYS = ("ArrowRight", "PageDown", " ")
"""A presenter's clicker: each steps one round forward (presenter mode)."""


def _bottoms(page) -> dict[str, float]:
    boxes = {s: page.locator(s).first.bounding_box() for s in FOLD}
    return {s: (b["y"] + b["height"] if b else float("inf")) for s, b in boxes.items()}


def _number(title: str) -> int:
    return [w["title"] for w in load_walkthroughs()].index(title) + 1


def _load(page, title: str, button: str = "#viasd-walk") -> int:
    """Pick `title`, press `button` (load or the fix), wait for round 1; returns how many rounds it has."""
    page.locator("#viasd-walk-pick input").click()
    page.get_by_role("option", name=f"{_number(title)}. {title}", exact=True).click()
    if button != "#viasd-walk":
        page.wait_for_selector(button, state="visible", timeout=30_000)
    page.evaluate("() => { const c = document.querySelector('#viasd-caption .viasd-caption'); "
                  "if (c) c.removeAttribute('data-round'); }")  # so the wait below sees the new walkthrough's round 1
    page.click(button)
    page.wait_for_function("(t) => (document.querySelector('#viasd-classroom-heading')?.innerText || '').includes(t)"
                           " && document.querySelector('#viasd-caption .viasd-caption[data-round=\"1\"]')",
                           arg=title[:24], timeout=600_000)
    return int(page.get_attribute("#viasd-round-slider input[type=range]", "max"))


def _every_round_fits(page, title: str, rounds: int) -> None:
    """Step through every round with the clicker's keys; at each one, controls, text, caption and table fit."""
    for number in range(1, rounds + 1):
        if number > 1:
            page.keyboard.press(KEYS[number % len(KEYS)])
            page.wait_for_selector(f"#viasd-caption .viasd-caption[data-round='{number}']", timeout=60_000)
        page.evaluate("() => window.scrollTo(0, 0)")
        over = {s: b for s, b in _bottoms(page).items() if b > PROJECTOR["height"]}
        assert not over, f"{title}, round {number} of {rounds}: below the fold at 1024x768: {json.dumps(over)}"
    if rounds > 2:  # and back: ← and PageUp
        for key, number in (("ArrowLeft", rounds - 1), ("PageUp", rounds - 2)):
            page.keyboard.press(key)
            page.wait_for_selector(f"#viasd-caption .viasd-caption[data-round='{number}']", timeout=60_000)


@pytest.fixture(scope="module")
def presenter(browser, app_url: str):
    page = _open(browser, app_url, PROJECTOR)
    page.get_by_role("tab", name=re.compile("Classroom")).click()
    page.get_by_label("Presenter mode").check()
    page.wait_for_function("() => document.body.classList.contains('viasd-presenter')")
    yield page
    page.context.close()


@pytest.mark.parametrize("title", [w["title"] for w in load_walkthroughs()])
def test_every_round_of_every_walkthrough_fits_a_projector_and_the_keys_step_it(presenter, title: str) -> None:
    """At 1024x768 in presenter mode: every round's controls, text, caption and table end above the fold, and
    →, PageDown and Space step forward, ← and PageUp back (the walkthrough's fix too, where it has one)."""
    page = presenter
    _every_round_fits(page, title, _load(page, title))
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / f"09_presenter_{re.sub(r'[^a-z]+', '_', title.lower())[:24]}.png"))
    if next(w for w in load_walkthroughs() if w["title"] == title).get("fixed_config"):
        rounds = _load(page, title, "#viasd-walk-fix")
        assert "The fix" in page.inner_text("#viasd-classroom-heading")
        _every_round_fits(page, title + " (the fix)", rounds)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_replaced_word_is_boxed_in_both_schemes_and_the_about_rule_has_two_decisions(browser, app_url: str,
                                                                                       scheme: str) -> None:
    """Replaced and rejected words differ from kept ones beyond hue (a box; the rejected draft struck through),
    in light and dark mode, at 1366x900; the About tab draws the rule with its two decisions."""
    page = _open(browser, app_url + ("?__theme=dark" if scheme == "dark" else ""), {"width": 1366, "height": 900})
    page.get_by_role("tab", name=re.compile("Classroom")).click()
    title = next(w["title"] for w in load_walkthroughs() if w.get("recorded_trace"))
    _load(page, title)
    page.get_by_label("Show later rounds").check()
    page.wait_for_selector("#viasd-class-tokens .tok.faded", timeout=60_000)
    shadows = page.evaluate("""() => ['.tok.replaced', '.tok.o-full-accepted:not(.replaced)'].map(s => {
        const e = document.querySelector('#viasd-class-tokens ' + s); return e && getComputedStyle(e).boxShadow; })""")
    assert shadows[0] and shadows[0] != "none", f"a replaced word has no box in {scheme} mode"
    assert shadows[1] == "none", "a kept word must not be boxed"
    page.screenshot(path=str(ARTIFACTS / f"10_classroom_{scheme}_1366.png"))
    page.get_by_role("tab", name=re.compile("About")).click()
    drawing = page.locator("#viasd-rule-drawing")
    drawing.wait_for(timeout=30_000)
    assert drawing.locator("polygon").count() == 3 and "s ≥ τ_slim ?" in drawing.text_content()
    assert page.locator("#viasd-layer-stack rect").count() > 0 and page.locator("#viasd-round-timeline").count() == 1
    page.screenshot(path=str(ARTIFACTS / f"11_about_{scheme}.png"), full_page=True)
    page.context.close()


def test_dark_mode_keeps_the_presenter_layout(browser, app_url: str) -> None:
    """The dark theme sets its own --layout-gap: presenter mode must still win, so the tightest round (the recorded
    pair's last) fits 1024x768 in dark mode too."""
    page = _open(browser, app_url + "?__theme=dark", PROJECTOR)
    page.get_by_role("tab", name=re.compile("Classroom")).click()
    page.get_by_label("Presenter mode").check()
    title = next(w["title"] for w in load_walkthroughs() if w.get("recorded_trace"))
    last = _load(page, title)
    page.fill("#viasd-round-slider input[type=number]", str(last))
    page.press("#viasd-round-slider input[type=number]", "Enter")
    page.wait_for_selector(f"#viasd-caption .viasd-caption[data-round='{last}']", timeout=60_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    assert "dark" in page.evaluate("() => document.body.className")
    over = {s: b for s, b in _bottoms(page).items() if b > PROJECTOR["height"]}
    assert not over, f"{title}, round {last}, dark: below the fold at 1024x768: {json.dumps(over)}"
    page.screenshot(path=str(ARTIFACTS / "12_presenter_dark_last_round.png"))
    page.context.close()
