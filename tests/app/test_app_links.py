"""Shared links in headless Chromium: `run=1` runs, a link carries every setting, and the run it reopens is
the very run it was made from."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from app_fixtures import app_url_fixture, browser_fixture  # noqa: F401  (fixtures)

from app.settings import Settings
from examples import load_prompts

pytestmark = [pytest.mark.embedded, pytest.mark.browser]

EXAMPLE = load_prompts("chat")[0]
SAMPLED = Settings(prompt=EXAMPLE.text, mode="via", drafter="self", draft_route="skip-middle-50",
                   slim_route="skip-middle-25", gamma=3, max_new_tokens=12, sampling=True, temperature=0.7,
                   top_p=0.9, seed=7, tau_accept=0.5, tau_slim=0.3, copy_evidence="verifier", draft_stop_below=0.0,
                   audit_span=32)
"""A sampled three-tier self-drafter run: every value differs from the opening preset, so a link that drops
one of them reopens a different run."""
TOKENS_JS = """() => [...document.querySelectorAll('#viasd-tokens .tok')].map(
    e => [e.textContent, e.dataset.outcome, e.dataset.tier, e.dataset.round, e.dataset.reason].join('|'))"""


def _done(pg) -> None:
    pg.wait_for_function("() => /^Done/.test(document.querySelector('#viasd-status')?.innerText || '')",
                         timeout=400_000)


def test_settings_round_trip_through_a_query_string() -> None:
    from app.share import models_from_query, query_of, settings_from_query

    query = query_of(SAMPLED, models=("some/verifier", "some/drafter"))
    params = dict(parse_qsl(query[1:], keep_blank_values=True))
    opened, problems = settings_from_query(params)
    assert problems == [] and opened == SAMPLED
    assert models_from_query(params) == ("some/verifier", "some/drafter") and params["run"] == "1"
    assert models_from_query({"prompt": "hi"}) is None
    bad, problems = settings_from_query({**params, "sampling": "maybe"})
    assert bad is not None and bad.sampling is False and problems == ["sampling='maybe' is not true or false"]


def test_a_run_link_runs_and_reopens_the_identical_run(browser, app_url: str) -> None:
    from app.session import SESSIONS
    from app.share import query_of
    from core import generate

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    first = context.new_page()
    first.goto(app_url + query_of(SAMPLED), wait_until="domcontentloaded")
    _done(first)  # run=1 pressed Run by itself
    shown = first.evaluate(TOKENS_JS)
    assert first.locator("#viasd-example input").input_value() == EXAMPLE.label  # the selector follows the link
    first.click("#viasd-share")
    first.wait_for_function("() => (document.querySelector('#viasd-share-link textarea, #viasd-share-link input')"
                            "?.value || '').startsWith('http')")
    link = first.locator("#viasd-share-link textarea, #viasd-share-link input").first.input_value()
    second = context.new_page()
    second.goto(link, wait_until="domcontentloaded")
    _done(second)
    again = second.evaluate(TOKENS_JS)
    context.close()
    trace = generate(SESSIONS.default_bundle(), SAMPLED.prompt, SAMPLED.config())
    expected = [f"{t.text}|{t.outcome}|{t.tier}|{t.round}|{t.reason}" for t in trace.tokens]
    assert shown and shown == again, "the shared link reopened a different run"
    assert len(shown) == len(expected) and [s.split("|")[1:] for s in shown] == [e.split("|")[1:] for e in expected]

