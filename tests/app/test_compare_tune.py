"""Compare's prompt-set panel (app/tabs/compare_tune.py): tunes over an uploaded file with the command's parser,
draws acceptance by draft position, offers the export, and a bad file is one line that leaves the app working.
The handler runs on a tiny model here; the last test drives the launched app (embedded model) through its API."""

from __future__ import annotations

import json

import pytest
from app_fixtures import PROMPT, SETTINGS, TEST_SETTINGS, app_client_fixture, app_url_fixture  # noqa: F401

from app.tabs import compare_tune
from app.tabs.compare_tune import TUNE_OUTPUTS, _tune_set, halves_table, parse_values
from app.views.acceptance_chart import acceptance_figure
from core.errors import ConfigError

ROWS = [{"prompt": "abc abc abc abc", "must": ["abc"]}, {"prompt": "hello there,\nhow are you"},
        {"prompt": "the cat sat on the mat"}, {"prompt": "one two one two", "must_not": ["dog"]}]


@pytest.fixture(scope="module")
def tiny(request):
    from tiny import tiny_bundle

    return tiny_bundle(layers=6, middle_scale=0.1)


def _run(monkeypatch, tiny, path, values="0.5, 1.0", ceiling=100, stop_after=None):
    monkeypatch.setattr(compare_tune.SESSIONS, "bundle", lambda session="": tiny)
    calls = []

    def progress(share, desc=""):
        calls.append(desc)
        if stop_after is not None and len(calls) >= stop_after:
            compare_tune.SESSIONS.request_stop("test-tune")

    updates = list(_tune_set(TEST_SETTINGS, "test-tune", str(path) if path else None, values, ceiling, progress))
    return updates, calls


def test_a_prompt_file_is_tuned_drawn_and_exported(monkeypatch, tiny, tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    updates, calls = _run(monkeypatch, tiny, path)
    assert updates[0]["status"].startswith("… Tuning 3 settings on 2 prompts of mine.jsonl")
    final = updates[-1]
    assert set(final) == set(TUNE_OUTPUTS) and final["status"].startswith("**Done:**")
    assert calls[-1] == "held-apart half" and "setting 3/3" in calls
    export = json.loads(open(final["export"]).read())
    assert list(export) == ["via_sd", "transformers", "vllm", "sglang"]
    table = final["table"]
    assert list(table["half"]) == ["tuning", "held apart"] and list(table["prompts"]) == [2, 2]
    assert table["token agreement"].iloc[1] == pytest.approx(export["via_sd"]["held_apart_half"]["agreement"],
                                                             abs=1e-3)
    bars = [t for t in final["plot"].data if t.type == "bar"]
    held = export["via_sd"]["held_apart_half"]["serving"]
    held_bars = [t for t in bars if t.x[0][0] == "held apart"]
    stacked = [sum(t.y[i] for t in held_bars) for i in range(TEST_SETTINGS.gamma)]
    assert stacked == pytest.approx(held["acceptance_by_position"], abs=1e-3)


def test_stop_ends_the_grid_early(monkeypatch, tiny, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("abc abc abc\nhello there\nthe cat sat\none two\n")
    updates, _ = _run(monkeypatch, tiny, path, values="0.3, 0.5, 0.7, 1.0", stop_after=2)
    # a 100 % ceiling: every setting meets it, so the two that ran before the stop give a pick
    assert updates[-1]["status"].startswith("**Stopped early:** 2 of 10 settings.")


@pytest.mark.parametrize("content, message", [
    ("", "is empty"), ('{"prompt": "a"}\n{"prompt": "b", "oops": 1}\n', "unknown key 'oops'"),
    ("{not json\n", "line 1 is not JSON"), ('{"prompt": "only one"}\n', "at least two prompts"),
])
def test_a_bad_file_is_one_line_naming_the_file(monkeypatch, tiny, tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    updates, _ = _run(monkeypatch, tiny, path)
    assert len(updates) == 1 and set(updates[0]) == {"status"}
    status = updates[0]["status"]
    assert message in status and "bad.jsonl" in status and "\n" not in status.strip()
    assert str(tmp_path) not in status  # the upload's folder on the server is not shown


def test_no_file_and_bad_values_are_one_line_too(monkeypatch, tiny, tmp_path):
    assert "choose a prompt file first" in _run(monkeypatch, tiny, None)[0][0]["status"]
    path = tmp_path / "ok.txt"
    path.write_text("a b\nc d\n")
    assert "cannot read threshold values" in _run(monkeypatch, tiny, path, values="0.5, banana")[0][0]["status"]
    assert "percentage within [0, 100]" in _run(monkeypatch, tiny, path, ceiling=250)[0][0]["status"]
    with pytest.raises(ConfigError):
        parse_values("2.0")


def test_the_empty_views_say_what_to_do():
    assert "Tune over a prompt file" in acceptance_figure(None).layout.annotations[0].text
    assert list(halves_table(None).columns)[:2] == ["half", "prompts"] and halves_table(None).empty


@pytest.mark.embedded
def test_the_launched_app_tunes_an_uploaded_file_and_keeps_working_after_a_bad_one(app_client, tmp_path):
    from gradio_client import handle_file

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a", "answer": 1}\n')
    status, *_ = app_client.predict(PROMPT, *SETTINGS, handle_file(str(bad)), "0.5, 1.0", 100, api_name="/tune_set")
    assert "unknown key 'answer'" in status and "\n" not in status.strip()
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in ROWS[:2]) + "\n")
    status, plot, table, export = app_client.predict(PROMPT, *SETTINGS, handle_file(str(good)), "0.5, 1.0", 100,
                                                     api_name="/tune_set")
    assert status.startswith("**Done:**") and plot["type"] == "plotly"
    assert list(json.loads(open(export).read())) == ["via_sd", "transformers", "vllm", "sglang"]
