"""Charts fit and follow the colour scheme, in headless Chromium at 1366 and 1024 wide."""

from __future__ import annotations

import re

import pytest
from app_fixtures import app_url_fixture, browser_fixture  # noqa: F401  (fixtures)
from test_app_browser import ARTIFACTS

pytestmark = [pytest.mark.embedded, pytest.mark.browser]

CLIPPED = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.offsetParent).flatMap(p => {
  const svg = p.querySelector('.main-svg').getBoundingClientRect();
  return [...p.querySelectorAll('.infolayer text, .legend text')].filter(t => t.textContent.trim()).map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent.slice(0, 60), left: r.left - svg.left, right: svg.right - r.right,
            top: r.top - svg.top, width: r.width};
  }).filter(t => t.width > 0 && (t.left < -1 || t.right < -1 || t.top < -1));
})"""
"""Every title, axis title, subplot title and legend entry of every visible chart that pokes out of its chart."""


def _charts(page) -> int:
    return page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.offsetParent).length")


@pytest.mark.parametrize("width", [1366, 1024])
def test_no_chart_title_or_label_is_clipped(browser, app_url: str, width: int) -> None:
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#viasd-run", timeout=60_000)
    for tab in ("Generate", "Compare"):
        page.get_by_role("tab", name=re.compile(tab)).click()
        page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.offsetParent)",
                               timeout=60_000)
        page.wait_for_timeout(800)  # plotly lays out after the tab is shown
        assert _charts(page) >= 2
        clipped = page.evaluate(CLIPPED)
        assert not clipped, f"{tab} at {width}px: {clipped}"
        page.screenshot(path=str(ARTIFACTS / f"10_charts_{tab.lower()}_{width}.png"), full_page=True)
    page.context.close()


def test_charts_turn_dark_with_the_page(browser, app_url: str) -> None:
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(app_url + "?__theme=dark", wait_until="domcontentloaded")
    page.wait_for_selector("#viasd-run", timeout=60_000)
    page.get_by_role("tab", name=re.compile("Compare")).click()
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.offsetParent)",
                           timeout=60_000)
    colours = page.evaluate("""() => { const p = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p.offsetParent); const t = p.querySelector('.gtitle');
        return {bg: getComputedStyle(p.querySelector('.svg-container > .main-svg')).backgroundColor,
                title: t && getComputedStyle(t).fill}; }""")
    assert colours["bg"] == "rgb(22, 22, 26)", colours  # the dark template's background, not white
    assert colours["title"] == "rgb(242, 242, 242)", colours
    page.context.close()
