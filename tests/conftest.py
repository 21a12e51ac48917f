"""Two tiers of tests.

`python -m pytest` runs the quick tier: the tiny random-weight models and one path on the real embedded model
(the tests marked `quick`), in a few minutes on two cores. `python -m pytest --full` runs everything, as CI
does: the real embedded model end to end, the app in headless Chromium, the mutation check and, where
VIASD_REAL_PAIR=1, the real pair. Naming files or test ids, or a `-m` expression, selects exactly what was
named (the quick tier only trims the default run).
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

FULL_ONLY = ("embedded", "browser", "mutation", "real_pair", "full")  # left out of the quick tier (but `quick`)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="run every test: the real embedded model, the browser, the mutation check (CI's command)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default run (no paths, no -m, no --full) keeps the quick tier only."""
    chose = config.getoption("--full") or config.option.markexpr or config.args_source != config.ArgsSource.TESTPATHS
    if chose:
        return
    keep, drop = [], []
    for item in items:
        heavy = any(item.get_closest_marker(m) for m in FULL_ONLY) and not item.get_closest_marker("quick")
        (drop if heavy else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_report_header(config: pytest.Config) -> str:
    return "tier: full (every test)" if config.getoption("--full") else "tier: quick unless paths or -m are given " \
        "(`python -m pytest --full` runs everything)"


@pytest.fixture(autouse=True, scope="module")
def _no_background_grid_outlives_its_module():
    """An app test's runs queue background grids (app.prefetch) that would otherwise run on into later modules,
    taking their CPU and showing up in their spies (a test of the scorer once recorded the prefetcher's passes)."""
    yield
    prefetch = sys.modules.get("app.prefetch")
    if prefetch is not None:
        prefetch.PREFETCHER.clear()
