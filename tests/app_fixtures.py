"""Shared fixtures for the app tests: one launched app per test session (free port, closed at the end).

Kept out of conftest.py so the core tests' fixtures and these never clash; test modules import the
*_fixture functions (pytest registers them under their `name`, so tests ask for app_url / app_client).
`SETTINGS` is the positional argument list of the public endpoints, built from `app.settings.Settings`.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from app.settings import Settings  # noqa: E402  (after the analytics default)

PROMPT = "Explain photosynthesis in two sentences."
TEST_SETTINGS = Settings(prompt=PROMPT, mode="via", drafter="self", draft_route="skip-middle-50",
                         slim_route="skip-middle-25", gamma=3, max_new_tokens=16, tau_accept=0.5, tau_slim=0.3,
                         copy_evidence="verifier", draft_stop_below=0.0, audit_span=32)
SETTINGS = TEST_SETTINGS.as_list()[1:]
"""(mode, drafter, draft_route, slim_route, gamma, max_new_tokens, sampling, temperature, top_p, seed, tau_a, tau_s,
copy_evidence, draft_stop_below, audit_span): every Settings field after the prompt, in API order."""


def settings_with(**changes: object) -> list:
    """SETTINGS with some values changed by name (e.g. tau_accept=1.0), still in API order."""
    return TEST_SETTINGS.with_(**changes).as_list()[1:]


def by_name(result: tuple | list, names: tuple[str, ...]) -> dict:
    """A gradio_client result keyed by output name (names from the tab module, e.g. generate.OUTPUTS)."""
    return dict(zip(names, result, strict=False))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_LAUNCHED: dict[str, object] = {}  # each importing module registers this fixture; all of them share one server


@pytest.fixture(scope="session", name="app_url")
def app_url_fixture() -> Iterator[str]:
    """Launch the real app (embedded model) once per test session; yield its URL."""
    from app.ui import build_demo, launch_kwargs

    if "url" in _LAUNCHED:
        yield _LAUNCHED["url"]
        return
    demo = build_demo()
    demo.queue()
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    _LAUNCHED["url"] = f"http://127.0.0.1:{port}/"
    try:
        yield _LAUNCHED["url"]
    finally:
        from app.prefetch import PREFETCHER

        PREFETCHER.stop()
        _LAUNCHED.clear()
        demo.close()


@pytest.fixture(scope="session", name="app_client")
def app_client_fixture(app_url: str) -> object:
    """A gradio_client Client connected to the launched app."""
    from gradio_client import Client

    return Client(app_url, verbose=False)


CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium") or ""
REQUIRED = os.environ.get("VIASD_REQUIRE_BROWSER") == "1"  # CI: a missing browser is a failure, not a skip
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[object]:
    """Debian's headless Chromium (never Playwright's own download); skipped without it unless required."""
    if REQUIRED:
        import playwright.sync_api as playwright
        assert CHROMIUM, "VIASD_REQUIRE_BROWSER=1 but no chromium executable was found"
    else:
        playwright = pytest.importorskip("playwright.sync_api")
        if not CHROMIUM:
            pytest.skip("no Chromium executable (/usr/bin/chromium or chromium on PATH)")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()
