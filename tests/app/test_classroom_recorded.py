"""A walkthrough with "recorded_trace" is replayed from its saved trace and never loads or runs a model."""

from __future__ import annotations

import pytest
from tiny import tiny_bundle

from app.tabs import classroom as tab
from app.views import walkthroughs
from core import generate
from core.config import LOOKUP_PRESET
from core.errors import ConfigError
from core.trace import Trace


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[object, Trace]:
    folder = tmp_path_factory.mktemp("traces")
    trace = generate(tiny_bundle(avoid_eos=True), "the cat sat on the mat. the cat sat on the",
                     LOOKUP_PRESET.with_(max_new_tokens=16))
    (folder / "tiny.json").write_text(trace.to_json())
    return folder, trace


def test_a_recorded_walkthrough_opens_its_saved_trace_without_a_model(saved, monkeypatch) -> None:
    folder, trace = saved
    walk = {"title": "Saved", "prompt": "the cat", "recorded_trace": "tiny.json", "talking_points": ["one"]}
    monkeypatch.setattr(walkthroughs, "TRACES", folder)
    monkeypatch.setattr(tab, "_walkthroughs", lambda: {"Saved": walk})

    def no_model(*_a, **_k):
        raise AssertionError("a recorded walkthrough loaded or ran a model")

    monkeypatch.setattr(tab, "_run_walkthrough", no_model)
    monkeypatch.setattr(tab.SESSIONS, "bundle", no_model)

    class Stranger:  # another model's tokenizer: its spelling disagrees with the trace, so it must not be used
        def decode(self, ids, skip_special_tokens=False):
            return "?"

    monkeypatch.setattr(tab.SESSIONS, "tokenizer_for", lambda name: Stranger())
    opened = tab._walkthrough("Saved", "session", False)
    assert opened["trace"].token_ids == trace.token_ids and opened["trace"].rounds == trace.rounds
    assert "Replayed from a saved run" in opened["details"] and "“?”" not in opened["caption"]
    assert "Round 1 of" in opened["caption"]


def test_a_recorded_trace_outside_the_folder_or_unreadable_is_one_line(saved) -> None:
    folder, _ = saved
    with pytest.raises(ConfigError, match="must be a file name"):
        walkthroughs.recorded_trace({"recorded_trace": "../secrets.json"}, folder)
    (folder / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot replay recorded_trace 'bad.json'"):
        walkthroughs.recorded_trace({"recorded_trace": "bad.json"}, folder)
    with pytest.raises(ConfigError, match="cannot replay"):
        walkthroughs.recorded_trace({"recorded_trace": "missing.json"}, folder)
    assert walkthroughs.recorded_trace({"title": "live"}, folder) is None
