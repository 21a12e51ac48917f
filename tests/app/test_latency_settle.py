"""`python -m app.tools.latency` times a move to its final state, not to the page's first reaction.

A move to a point the page has not computed draws the nearest computed point's numbers as ghosts at once, and the
server's re-route replaces them 0.3 s to minutes later. Timed to the ghosts, a live pair's far jump read 16 ms and
its headline "after" was the ghost's (2026-12-02). On a bare page in Chromium, no app: the ghost must be waited
out, and a point the page draws itself must still be timed to its own change.
"""

from __future__ import annotations

import pytest
from app_fixtures import browser_fixture  # noqa: F401  (fixture)

from app.tools import latency

pytestmark = [pytest.mark.browser]


def headline(speed: str, ghost: bool = False) -> str:
    classes = "viasd-headline ghost" if ghost else "viasd-headline"
    return f'<div id="viasd-headline" class="{classes}"><span class="value">{speed}</span></div>'


PAGE = f"""<div id="viasd-tokens-box"><div id="viasd-tokens">text</div></div>
<div id="viasd-headline-box">{headline("2.23×")}</div>"""
HEADLINE_AT = """([ms, html]) => document.addEventListener('keydown', () => setTimeout(() => {
  document.querySelector('#viasd-headline-box').innerHTML = html; }, ms), true)"""


@pytest.fixture()
def page(browser):
    pg = browser.new_page()
    pg.set_content(PAGE)
    pg.evaluate(latency.OBSERVE)
    yield pg
    pg.close()


def _press(page) -> tuple[float, bool]:
    page.evaluate("() => document.dispatchEvent(new KeyboardEvent('keydown'))")
    return latency._settle(page)


def test_a_ghost_headline_is_waited_out_until_the_servers_answer(page) -> None:
    page.evaluate(HEADLINE_AT, [5, headline("2.23×", ghost=True)])
    page.evaluate(HEADLINE_AT, [900, headline("2.75×")])
    done, served = _press(page)
    assert served
    assert done >= 850, done  # not the ghost's 5 ms
    assert page.evaluate(latency.HEADLINE) == ["2.75×"]


def test_a_point_the_page_draws_itself_is_timed_to_its_own_change(page) -> None:
    page.evaluate(HEADLINE_AT, [5, headline("2.49×")])
    done, served = _press(page)
    assert not served
    assert done < 200, done
