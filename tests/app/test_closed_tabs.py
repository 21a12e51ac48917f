"""A closed tab's state is forgotten a grace period after it closed: Gradio's, and the app's own records."""

from __future__ import annotations

import datetime
import threading
import time
from collections import OrderedDict
from types import SimpleNamespace

import gradio as gr

from app import closed_tabs
from app.closed_tabs import ClosedTabs
from app.session import Sessions
from app.views.page_grid import PageFeed


class _Clock:
    def __init__(self) -> None:
        self.at = datetime.datetime(2026, 12, 3, 12, 0, 0)

    def __call__(self) -> datetime.datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += datetime.timedelta(seconds=seconds)


def _holder(*sessions: str, clock: _Clock) -> SimpleNamespace:
    return SimpleNamespace(session_data=OrderedDict((s, object()) for s in sessions),
                           time_last_used=dict.fromkeys(sessions, clock()), lock=threading.Lock())


def test_a_tab_closed_longer_than_the_grace_is_forgotten_at_the_next_close() -> None:
    clock, forgotten = _Clock(), []
    holder = _holder("a", "b", "open", clock=clock)
    tabs = ClosedTabs(lambda: holder, forgotten.append, grace_s=60, now=clock)
    assert tabs.closed("a") == []
    clock.advance(59)
    assert tabs.closed("b") == [] and "a" in holder.session_data  # still within its grace
    clock.advance(1)
    assert tabs.closed("b") == ["a"] and forgotten == ["a"]
    assert set(holder.session_data) == {"b", "open"} and "a" not in holder.time_last_used
    assert len(tabs) == 1  # b, closed again just now


def test_a_tab_that_came_back_after_closing_is_kept() -> None:
    clock, forgotten = _Clock(), []
    holder = _holder("back", clock=clock)
    tabs = ClosedTabs(lambda: holder, forgotten.append, grace_s=60, now=clock)
    tabs.closed("back")
    clock.advance(5)
    holder.time_last_used["back"] = clock()  # an event of that session: the page reconnected
    clock.advance(60)
    assert tabs.closed("other") == [] and forgotten == [] and "back" in holder.session_data


def test_forgetting_a_session_drops_its_visitor_record_and_page_feed_but_not_a_running_job() -> None:
    sessions, feed = Sessions(loader=lambda **_: None), PageFeed()
    sessions.start_job("gone")
    feed.page_opened("gone", None)
    with sessions.job("busy"):
        sessions.forget("gone")
        sessions.forget("busy")  # its run still goes on: the record stays until it ends
        assert sessions.visitor_count() == 1
    feed.forget("gone")
    assert "gone" not in feed._pages


def test_the_app_forgets_closed_tabs_on_gradio_s_unload_event() -> None:
    from app import ui

    demo = ui.build_demo()
    unloads = [fn.fn for fn in demo.fns.values() if any(t[1] == "unload" for t in fn.targets)]
    assert len(unloads) == 1 and isinstance(unloads[0].__self__, ClosedTabs)


def test_a_page_that_closes_its_tab_has_its_gradio_state_forgotten(monkeypatch) -> None:
    """Through Gradio itself: a tab holding the heartbeat open and dropping it fires unload; the next close after
    the grace forgets the first tab's state, as a browser's tab close would."""
    from app.tools.page_client import Page

    monkeypatch.setattr(closed_tabs, "GRACE_S", 0.3)
    forgotten: list[str] = []
    with gr.Blocks() as demo:
        state, box = gr.State(0), gr.Textbox()
        gr.Button().click(lambda n: (n + 1, str(n + 1)), state, [state, box], api_name="count")
        demo.unload(ClosedTabs(lambda: demo.state_holder, forgotten.append).on_unload)
    demo.queue()
    demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        first, second = Page(demo.local_url), Page(demo.local_url)
        count = next(i for i, d in first.dependencies.items() if d.get("api_name") == "count")
        assert first.call(count)[1] == "1" and second.call(count)[1] == "1"
        held = demo.state_holder.session_data
        assert {first.session, second.session} <= set(held)
        first.close()
        _wait(lambda: held[first.session].is_closed)
        time.sleep(0.4)
        second.close()
        _wait(lambda: first.session not in held)
        assert forgotten == [first.session] and second.session in held  # the second is within its grace
    finally:
        demo.close()


def _wait(condition, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the app did not see the tab close"
        time.sleep(0.05)
