"""Five visitors at once against the launched app (CI's quick form of `python -m app.tools.load_test --clients 20`)."""

from __future__ import annotations

import pytest
from app_fixtures import app_url_fixture  # noqa: F401  (fixture)

from app.tools.load_test import call_kwargs, find_trace, prompt_for, run_load

pytestmark = pytest.mark.embedded


def test_five_concurrent_clients_each_get_their_own_correct_answer(app_url: str) -> None:
    report = run_load(app_url, clients=5, tokens=6, timeout_s=600)
    print(report.table())
    assert not report.errors, report.table()
    assert report.answers_after
    assert len({v.prompt for v in report.visits}) == 5 and {v.mode for v in report.visits} == {"plain", "sd", "via"}
    assert all(v.trace["prompt"] == v.prompt for v in report.visits)


def test_helpers_fill_defaults_and_find_the_trace(tmp_path: object) -> None:
    from app.settings import Settings

    params = [{"parameter_name": "prompt", "parameter_has_default": False, "example_input": "hi"},
              {"parameter_name": "gamma", "parameter_has_default": True, "parameter_default": 6},
              {"parameter_name": "other", "parameter_has_default": True, "parameter_default": 4}]
    # a setting left out takes the API's default (Settings), not the opening page's widget value (the pair's 6)
    assert call_kwargs(params, {"prompt": "mine", "unknown": 1}) == {"prompt": "mine", "gamma": Settings.gamma,
                                                                     "other": 4}
    assert call_kwargs(params, {"gamma": 3}) == {"prompt": Settings.prompt, "gamma": 3, "other": 4}
    path = tmp_path / "t.json"
    path.write_text('{"prompt": "p", "tokens": []}')
    assert find_trace(("<html>", ["a.csv", str(path)])) == {"prompt": "p", "tokens": []}
    assert find_trace(("<html>", "status")) is None
    assert prompt_for(0) != prompt_for(1) and prompt_for(24) != prompt_for(0)
